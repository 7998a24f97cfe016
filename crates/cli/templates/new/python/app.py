"""The {{name}} tool: implements world `{{name}}` of wit/{{name}}.wit.

componentize-py generates the `wit_world` module from the WIT; a `result<T, E>` returns T
or raises `Err(E)`.
"""

import wit_world
from componentize_py_types import Err


class WitWorld(wit_world.WitWorld):
    def greet(self, name: str, times: int) -> str:
        if not name:
            raise Err("`name` is empty: say who to greet")
        if not 1 <= times <= 10:
            raise Err(f"`times` is {times}: give 1 to 10")
        return " ".join([f"Hello, {name}!"] * times)
