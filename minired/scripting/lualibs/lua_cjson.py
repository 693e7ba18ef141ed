"""cjson as Redis 7.0 ships it (Lua CJSON 2.1.0), written in Lua.

Pure Lua keeps cjson's observable choices for free: table traversal order is
Lua's own ``next`` order, numbers are formatted by the same C ``sprintf``
(``string.format('%.14g')``), and decoded numbers go through the same
``strtod`` (``tonumber`` on exactly the prefix strtod would consume).

Quirks reproduced on purpose, because scripts can observe them:
  * a NUL byte ends the document (the C parser works on a C string);
  * decode_invalid_numbers defaults to on, so hex, inf, nan, leading '+' and
    leading zeros are accepted through strtod;
  * array detection casts the largest index to a C int (indices >= 2^31 make
    the table an object), and the nesting limits also fail where the C code's
    lua_checkstack would (LUAI_MAXCSTACK = 8000 slots);
  * the configuration setters' range errors always name argument #1.
cjson.null is a userdata sentinel (Redis uses a NULL lightuserdata; both
report type 'userdata' and compare equal only to themselves). Ours prints as
Redis's does, "userdata: (nil)", through a __tostring that the sandbox's
getmetatable hides (a light userdata has no metatable).
"""
from __future__ import annotations

from minired.scripting.lualibs.support import lua_source

SOURCE = lua_source("cjson.lua")


# The Python helpers cjson.lua receives, in its order (after the support table).
HELPERS = ()
