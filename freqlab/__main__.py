"""``python -m freqlab``: the command line."""

if __name__ == "__main__":
    from freqlab.cli import run

    run()
