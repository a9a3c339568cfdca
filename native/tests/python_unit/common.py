"""Imports for the driver's unit tests: the stand-in tensorrt_llm and driver.py over a fake host."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "python"), os.path.join(HERE, "..", "..", "src", "pytorch")]

import fakehost  # noqa: E402  (installs _affinity_host before driver.py imports it)
import driver  # noqa: E402

__all__ = ["fakehost", "driver"]
