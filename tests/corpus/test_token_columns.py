"""freqlab.corpus.token_columns: a token column's lengths are its lists' lengths, and only lists of token ids are
read as such (a nested, float or string list, or a list with a null id, has no token count)."""

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
    assert column_lengths(column, "tokens", "f:row ").tolist() == [3, 1]


def test_a_fixed_size_token_list_column_gives_its_size_for_every_row():
    assert column_lengths(pa.array([[1, 2, 3], [4, 5, 6]], pa.list_(pa.int32(), 3)), "tokens", "f:row ").tolist() == [
        3,
        3,
    ]


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
        column_lengths(column, "tokens", "f:row ")


def test_a_null_token_id_is_refused_naming_its_row():
    column = pa.array([[1, 2], [3], [4, None, 6]])
    with pytest.raises(FreqlabError, match=r"^f:row 12: a null token id"):
        column_lengths(column, "tokens", "f:row ", first=10)


def test_a_length_beyond_int64_is_refused_not_read_as_negative():
    column = pa.array([3, 2**64 - 1], pa.uint64())
    with pytest.raises(FreqlabError, match=r"f:row 2: length 18446744073709551615 is beyond any document"):
        column_lengths(column, "length", "f:row ")
    assert column_lengths(pa.array([2**63 - 1, 0], pa.uint64()), "length", "f:row ").tolist() == [2**63 - 1, 0]


def test_a_null_id_in_a_list_view_whose_values_are_out_of_row_order_names_its_row():
    views = pa.ListViewArray.from_arrays(
        pa.array([2, 3, 0], pa.int32()), pa.array([1, 1, 2], pa.int32()), [8, None, 9, 7]
    )
    assert views.to_pylist() == [[9], [7], [8, None]]
    with pytest.raises(FreqlabError, match=r"^f:row 3: a null token id"):
        column_lengths(views, "tokens", "f:row ")
