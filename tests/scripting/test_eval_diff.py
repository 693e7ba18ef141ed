"""EVAL / EVALSHA / SCRIPT against real Redis: conversions, errors (with their `script: <sha>`
parts, which are deterministic), the sandboxed environment and shebang flags."""
from __future__ import annotations

import pytest

CONVERSIONS = [
    "return 1", "return 3.99", "return -3.99", "return 1e300", "return 0/0", "return 1/0",
    "return true", "return false", "return nil", "return 'x'", "return {1,2,nil,4}",
    "return {1,'a',{true,false},3.5}", "return {ok='fine'}", "return {ok='fi\\r\\nne'}",
    "return {err='boom'}", "return {err='MY boom\\nxx'}", "return {err=5}", "return {ok=5}",
    "return {err='a', ok='b'}", "return redis.status_reply('x')", "return redis.error_reply('boom')",
    "return redis.error_reply('-boom')", "return redis.error_reply('MY boom')",
    "return redis.error_reply('')", "return redis.status_reply(1)", "return redis.error_reply(1)",
    "return {double=1.5}", "return {double=1/0}", "return {double='x'}", "return {map={a=1}}",
    "return {set={a=true}}", "return {big_number='123'}", "return {1, {2, {3, {ok='x'}}}}",
]

ERRORS = [
    "return x", "x = 1", "return (", "error('boom')", "error('boom', 0)", "error(12)", "error(nil)",
    "error({err='MY boom'})", "error({err='boom'})", "error(redis.error_reply('MY x'))",
    "error('x\\ny')", "return redis.call('nosuch')", "return redis.call('get')", "return redis.call()",
    "return redis.pcall()", "return redis.call({})", "return redis.call('set', 'k', nil)",
    "return redis.call('set', 'k', true)", "return redis.pcall('set', 'k', true)",
    "return redis.call('client','foo')", "return redis.call('client')", "return redis.call('multi')",
    "return redis.call('eval','return 1', 0)", "return redis.pcall('get')",
    "return {redis.pcall('get')}", "rawset(_G, 'x', 1)", "setmetatable(_G, nil)",
    "string.rep = nil", "redis.call = nil", "getmetatable('').__index = {} return 1",
    "return table.insert(nil, 1)", "return math.random(0)", "return math.random('x')",
    "return math.random(1,2,3)", "math.randomseed() return 1", "return newproxy",
    "return redis.sha1hex()", "return redis.setresp(4)", "return redis.setresp()",
    "return redis.set_repl(99)", "return redis.set_repl()", "return redis.log(99, 'x')",
    "return redis.log(redis.LOG_WARNING)", "return redis.log('x', 'y')",
    "return redis.acl_check_cmd('nosuch')", "return {loadstring('x = 1')()}",
    "local t = nil; return t.x", "return 1 + {}", "redis.call('set','k','v') redis.call('lpush','k','a')",
]

ENVIRONMENT = [
    "local r={} for k,v in pairs(_G) do table.insert(r,k..':'..type(v)) end table.sort(r) return r",
    "local r={} for k,v in pairs(redis) do table.insert(r,k..':'..type(v)) end table.sort(r) return r",
    "local r={} for k,v in pairs(string) do table.insert(r,k) end table.sort(r) return r",
    "local r={} for k,v in pairs(table) do table.insert(r,k) end table.sort(r) return r",
    "local r={} for k,v in pairs(math) do table.insert(r,k) end table.sort(r) return r",
    "local r={} for k,v in pairs(coroutine) do table.insert(r,k) end table.sort(r) return r",
    "return {type(getmetatable(string)), type(getmetatable('')), type(getmetatable(_G).__index)}",
    "return ('x'):rep(3)", "return rawget(_G, 'string') ~= nil", "return #KEYS",
    "KEYS[1] = 'z' return KEYS[1]", "return coroutine.running()", "return _VERSION",
    "return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING, "
    "redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL, "
    "redis.REDIS_VERSION, redis.REDIS_VERSION_NUM}",
    "return redis.sha1hex('')", "return redis.sha1hex(1)", "return redis.sha1hex({})",
    "return redis.set_repl(redis.REPL_ALL)", "return redis.replicate_commands()",
    "return redis.breakpoint()", "return redis.debug('x')", "return redis.log(redis.LOG_DEBUG, 'x')",
    "return redis.acl_check_cmd('get', 'x')", "return {loadstring('return 1')()}",
    "return {pcall(loadstring('x = 1'))}", "return {loadstring(string.dump(function() return 1 end))}",
    "local a, b = loadstring(string.dump(function() return 1 end)) return b",
    "local s = string.dump(function() return 1 end) local i = 0 "
    "return {load(function() i = i + 1 if i == 1 then return s end end)}",
    "return select(2, loadstring('('))", "return tostring(1e15)..' '..tostring(0.1)",
    "return {pcall(function() local x = nil; return x.y end)}",
    "return {xpcall(function() error({err='E1'}) end, function(e) return e end)}",
    "local ok, e = pcall(redis.call, 'nosuch'); return {tostring(ok), e}",
    "local ok, e = pcall(error, {err='x'}); return type(e)",
    "local ok, e = pcall(error, {foo='x'}); return type(e)",
    "return __redis__err__handler('x')", "return collectgarbage('count') > 0",
    "local co = coroutine.wrap(function(a) local b = coroutine.yield(a + 1) return b * 2 end) "
    "return {co(1), co(5)}",
    "return cjson.decode('[1,2,3]')[2]", "return string.format('%d', 2^53)",
    "table.insert(_G, 5) return 1", "return _G[1]",
    # Redis's read-only tables are tables: C code reading them raw sees what they hold
    # (minired's are proxies; table.foreach and the libraries must read through them).
    "local n = 0 table.foreach(_G, function() n = n + 1 end) return n",
    "local r = {} table.foreach(string, function(k) r[#r + 1] = k end) table.sort(r) return r",
    "return table.foreach(math, function(k, v) if k == 'pi' then return v end end)",
    "return table.foreach(nil, print)", "return table.foreach({}, 1)",
    "local n = 0 table.foreachi(string, function() n = n + 1 end) return n",
    "return cjson.encode(string)", "return cjson.encode({x = math})", "return cjson.encode(redis)",
    "return cmsgpack.pack(bit)", "return #cmsgpack.pack(_G)", "return cmsgpack.pack(cjson.null)",
    "return {table.maxn(_G), table.getn(string), #_G, #string}",
    "return {map = bit}", "return {set = bit}", "return {1, bit, 3}", "return bit",
]

COMMANDS_FROM_SCRIPTS = [
    "redis.call('set', 'k', 3.5) return redis.call('get','k')",
    "redis.call('set', 'k', 0.1) return redis.call('get','k')",
    "redis.call('set', 'k', 1e20) return redis.call('get','k')",
    "redis.call('set', 'k', 12) return redis.call('get','k')",
    "redis.call('set', 'k', 1/0) return redis.call('get','k')",
    "return redis.call('get', 'nokey')", "return redis.call('set','k','v')",
    "return redis.call('rpush', 'l', 'a', 'b')", "return redis.call('lrange', 'l', 0, -1)",
    "return redis.call('incr', 'n')", "redis.call('select', 1) return redis.call('get', 'k')",
    "return redis.call('blpop', 'nolist', 0)",
]


def _script_cases(cases, *extra):
    return [pytest.param(case, id=case[:60]) for case in cases]


@pytest.mark.parametrize("script", _script_cases(CONVERSIONS + ERRORS + ENVIRONMENT))
def test_eval_resp2(diff, script):
    diff.check("EVAL", script, 0)


@pytest.mark.parametrize("script", _script_cases(CONVERSIONS + [
    "redis.setresp(3) return true", "redis.setresp(3) return false",
    "redis.setresp(3) return redis.call('get', 'nokey')",
    "redis.setresp(3) return {redis.call('get', 'nokey') == nil}",
    "redis.setresp(3) return redis.call('hgetall', 'nohash')",
    "return {map = bit}", "return {set = bit}", "return {map = {x = string}}",
]))
def test_eval_resp3(diff, script):
    diff.hello(3)
    diff.check("EVAL", script, 0, unordered=True)


@pytest.mark.parametrize("script", _script_cases(COMMANDS_FROM_SCRIPTS))
def test_commands_from_scripts(diff, script):
    diff.check("EVAL", script, 0)


def test_keys_and_args(diff):
    diff.check("EVAL", "return {KEYS[1], ARGV[1], ARGV[2], #KEYS, #ARGV}", 1, "k", "a", "b")
    diff.check("EVAL", "return 1", -1)
    diff.check("EVAL", "return 1", "x")
    diff.check("EVAL", "return 1", 2, "a")
    diff.check("EVAL", "return 1")


def test_script_flush_makes_a_new_runtime(diff):
    """SCRIPT FLUSH drops the Lua runtime with the scripts (Redis's scriptingReset): what a
    script changed in it, such as cjson's settings, goes too."""
    diff.check("EVAL", "cjson.encode_max_depth(1) cjson.decode_max_depth(1) return 1", 0)
    diff.check("EVAL", "return {pcall(cjson.encode, {{1}})}", 0)
    diff.check("EVAL", "return {pcall(cjson.decode, '[[1]]')}", 0)
    diff.check("SCRIPT", "FLUSH")
    diff.check("EVAL", "return cjson.encode({{1}})", 0)
    diff.check("EVAL", "return cjson.decode('[[1]]')", 0)
    diff.check("SCRIPT", "FLUSH", "ASYNC")
    diff.check("EVAL", "return cjson.encode({{1}})", 0)


def test_script_cache(diff):
    sha = diff.check("SCRIPT", "LOAD", "return ARGV[1]")
    diff.check("EVALSHA", sha, 0, "hi")
    diff.check("EVALSHA", sha.upper(), 0, "hi")
    diff.check("EVALSHA_RO", sha, 0, "hi")
    diff.check("SCRIPT", "EXISTS", sha, "ffff", sha.upper())
    diff.check("EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", 0)
    diff.check("EVALSHA", "fff", 0)
    diff.check("SCRIPT", "LOAD", "return (")
    diff.check("SCRIPT", "FLUSH", "x")
    diff.check("SCRIPT", "FLUSH", "ASYNC")
    diff.check("SCRIPT", "EXISTS", sha)
    diff.check("SCRIPT", "KILL")
    diff.check("SCRIPT", "FOO")
    diff.check("SCRIPT", "HELP")
    diff.check("EVAL", "return 1", 0)
    diff.check("SCRIPT", "EXISTS", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db")


@pytest.mark.parametrize("script", _script_cases([
    "#!lua flags=no-writes\nreturn redis.call('set', 'k', 1)", "#!lua\nreturn redis.call('set', 'k', 1)",
    "#!lua flags=bogus\nreturn 1", "#!lua name=x\nreturn 1", "#!luax\nreturn 1",
    "#!lua flags=no-writes,allow-oom\nreturn 1", "#!lua flags=\nreturn 1",
    "#!lua flags=allow-cross-slot-keys,no-cluster,allow-stale\nreturn 1", "#!lua", "#!lua\n",
    "#!lua flags=no-writes", "#!lua  flags=no-writes\nreturn 2", "#!lua flags=no-writes,\nreturn 2",
    "#!lu\nreturn 2", "#!lua foo\nreturn 2", "#!\nreturn 2", "#x\nreturn 2",
    "#!lua\nerror('line two')",
]))
def test_shebang(diff, script):
    diff.check("EVAL", script, 0)


def test_read_only_scripts(diff):
    diff.check("SET", "k", "v")
    diff.check("EVAL_RO", "return redis.call('set', 'k', 1)", 0)
    diff.check("EVAL_RO", "return redis.pcall('set', 'k', 1)", 0)
    diff.check("EVAL_RO", "return redis.call('get', 'k')", 0)
    diff.check("EVAL_RO", "#!lua\nreturn 1", 0)
    diff.check("EVAL_RO", "#!lua flags=no-writes\nreturn redis.call('get', 'k')", 0)


def test_pushed_keys_wake_blocked_clients_after_the_script(diff):
    diff.check("EVAL", "redis.call('rpush', 'q', 'a') redis.call('rpush', 'q', 'b') "
                       "return redis.call('llen', 'q')", 0)
    diff.check("LRANGE", "q", 0, -1)
