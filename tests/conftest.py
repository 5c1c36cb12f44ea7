import os
import sys
from pathlib import Path

# Tests load tokenizers to check their conversion and verification: no on-disk cache (freqlab.tokenize.cache)
# may answer for them. The cache's own tests turn it on in a temporary folder.
os.environ["FREQLAB_NO_CACHE"] = "1"

# lets test modules import their sibling reference helpers (e.g. tests/frequency/reference.py)
sys.path.insert(0, str(Path(__file__).parent))
