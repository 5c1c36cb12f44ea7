import sys
from pathlib import Path

# lets test modules import their sibling reference helpers (e.g. tests/frequency/reference.py)
sys.path.insert(0, str(Path(__file__).parent))
