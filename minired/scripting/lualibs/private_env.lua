-- A chunk's private environment (see load_chunk in support.py).
local g = ...
local env = {}
for _, name in ipairs({'type', 'next', 'pairs', 'ipairs', 'rawget', 'rawset',
                       'select', 'unpack', 'pcall', 'error', 'tostring',
                       'tonumber', 'setmetatable', 'getmetatable', 'newproxy'}) do
  env[name] = g[name]
end
for _, lib in ipairs({'string', 'math', 'table'}) do
  local copy = {}
  for k, v in pairs(g[lib]) do copy[k] = v end
  env[lib] = copy
end
return env
