"""freqlab.corpus.token_columns: a token column's lengths are its lists' lengths, and only lists of token ids are
read as such (a nested, float or string list has no token count). A row that is no document (a null list, a list
with a null id, a null, negative or past-int64 length) gets the length -(j + 1), reasons[j] saying why."""

import pyarrow as pa
import pytest

from freqlab.corpus.token_columns import column_lengths
from freqlab.errors import FreqlabError


@pytest.mark.parametrize(
    "column",
    [
        pa.array([[5, 6, 7], [8]], pa.list_(pa.int32())),
        pa.array([[5, 6, 7], [8]], pa.large_list(pa.int64())),
        pa.array([[5, 6, 7], [8]], pa.list_view(pa.uint32())),
        pa.array([[0], [5, 6, 7], [8]], pa.list_(pa.int16())).slice(1),  # a slice: offsets not from 0
    ],
)
def test_token_lists_give_their_lengths(column):
    assert lengths_and_reasons(column, "tokens") == ([3, 1], ())


def row_name(k: int) -> str:
    return f"f:row {k + 1}"


def lengths_and_reasons(column, kind):
    lengths, reasons = column_lengths(column, kind, row_name)
    assert lengths.dtype == "int64"
    return lengths.tolist(), reasons


def test_a_fixed_size_token_list_column_gives_its_size_for_every_row():
    assert lengths_and_reasons(pa.array([[1, 2, 3], [4, 5, 6]], pa.list_(pa.int32(), 3)), "tokens") == ([3, 3], ())


@pytest.mark.parametrize(
    "column",
    [
        pa.array([[[1, 2], [3]], [[4]]]),  # lists of lists: the outer length is no token count
        pa.array([[1.0, 2.0], [3.0]]),
        pa.array([["a", "b"], ["c"]]),
        pa.array(["ab", "c"]),
    ],
)
def test_a_column_that_is_not_lists_of_token_ids_is_refused_naming_its_type(column):
    with pytest.raises(FreqlabError, match=rf"f:row 1: the token column holds {column.type}, not lists of token ids"):
        column_lengths(column, "tokens", row_name)


def test_null_lists_and_lists_with_a_null_id_are_marked_by_reason():
    column = pa.array([[1, 2], None, [3], [4, None, 6], None, [None]])
    assert lengths_and_reasons(column, "tokens") == (
        [2, -1, 1, -2, -1, -2],
        ("null-token-list", "null-token-id"),
    )


@pytest.mark.parametrize(("kind", "reason"), [("tokens", "null-token-list"), ("length", "null-length")])
def test_a_column_of_nothing_but_nulls_marks_every_row(kind, reason):
    # pandas writes an all-None column with Arrow type null; datasets reads a JSON block of nulls so
    assert lengths_and_reasons(pa.array([None, None, None]), kind) == ([-1, -1, -1], (reason,))


def test_a_column_of_empty_lists_that_pyarrow_typed_list_of_null_is_empty_documents():
    assert lengths_and_reasons(pa.array([[], [], None]), "tokens") == ([0, 0, -1], ("null-token-list",))
    assert lengths_and_reasons(pa.array([[], [None]]), "tokens") == ([0, -1], ("null-token-id",))


def test_bad_length_values_are_marked_by_reason_and_the_largest_int64_is_a_length():
    assert lengths_and_reasons(pa.array([3, None, -2, 0]), "length") == (
        [3, -1, -2, 0],
        ("null-length", "negative-length"),
    )
    beyond = pa.array([3, 2**64 - 1, 2**63, 2**63 - 1], pa.uint64())  # read as int64 they would wrap negative
    assert lengths_and_reasons(beyond, "length") == ([3, -1, -1, 2**63 - 1], ("length-beyond-int64",))


def test_a_length_column_that_is_not_integers_is_refused_naming_its_type():
    with pytest.raises(FreqlabError, match=r"^f:row 2: the length column holds double, not integers: 2.5$"):
        column_lengths(pa.array([1.0, 2.5]), "length", row_name)


def test_a_null_id_in_a_list_view_whose_values_are_out_of_row_order_marks_its_row():
    views = pa.ListViewArray.from_arrays(
        pa.array([2, 3, 0], pa.int32()), pa.array([1, 1, 2], pa.int32()), [8, None, 9, 7]
    )
    assert views.to_pylist() == [[9], [7], [8, None]]
    assert lengths_and_reasons(views, "tokens") == ([1, 1, -1], ("null-token-id",))


def test_a_wrongly_typed_column_names_the_row_that_typed_it_and_its_value():
    """Arrow types a column by all its rows: one float or string among token lists types it double or mixed JSON.
    A review: row 6's [1.5] was blamed on row 1. Rows of integers read as doubles are not the culprit."""
    floats = pa.array([[1.0, 2.0], None, [3.0], [1.5]])
    with pytest.raises(
        FreqlabError,
        match=r"^f:row 4: the token column holds list<item: double>, not lists of token ids \(integers\): \[1\.5\]$",
    ):
        column_lengths(floats, "tokens", row_name)
    with pytest.raises(FreqlabError, match=r"^f:row 2: .*: \[1e\+20\]$"):  # an id past int64, read as a double
        column_lengths(pa.array([[1.0], [1e20]]), "tokens", row_name)
    if hasattr(pa, "json_"):  # what datasets reads from JSON lines of mixed types
        mixed = pa.array(["[1,2]", None, '"oops"'], pa.json_())
        with pytest.raises(FreqlabError, match=r"^f:row 3: the token column holds extension<arrow\.json>, .*: 'oops'$"):
            column_lengths(mixed, "tokens", row_name)
        ids = pa.ListArray.from_arrays([0, 2, 3, 4], pa.array(["1", "2", "3", '"x"'], pa.json_()))  # each id's JSON
        with pytest.raises(FreqlabError, match=r"^f:row 3: .*: \['x'\]$"):
            column_lengths(ids, "tokens", row_name)
