"""What every generated `tools/bfcl` app calls: a backend method run through `bfcl_state`,
its failures as the WIT `err` value. Component-only (it imports componentize-py's types).
"""

# componentize-py keeps only the modules imported at build time: `datetime.strptime`
# imports `_strptime` on its first call (TradingBot, TravelAPI), so it is imported here.
import _strptime  # noqa: F401

import bfcl_state
from componentize_py_types import Err


def caller(cls, state_dir):
    """A function `call(method, args)` for backend `cls`, its state under `state_dir`
    (None for a stateless class)."""

    def call(method, args):
        # Optional parameters left out (None) take the method's own defaults.
        given = {k: v for k, v in args.items() if v is not None}
        try:
            return bfcl_state.call(cls, state_dir, method, given)
        except bfcl_state.StateError as e:
            raise Err(f"state: {e}")
        except Exception as e:
            # What BFCL's execute_multi_turn_func_call records for a call that raised.
            raise Err(f"Error during execution: {str(e)}")

    return call
