// Drives ioredis and node-redis (RESP3) through common operations against the server on the
// given port and prints one JSON line per step; the Python test compares minired's lines with
// a real Redis's.
const Redis = require('ioredis');
const { createClient } = require('redis');

const port = Number(process.argv[2]);
const out = (step, value) => console.log(JSON.stringify([step, value]));

(async () => {
  const r = new Redis(port, '127.0.0.1', { lazyConnect: true });
  await r.connect();
  out('set px', await r.set('k', 'v', 'PX', 10000));
  out('get', await r.get('k'));
  out('pttl positive', (await r.pttl('k')) > 0);
  out('rpush', await r.rpush('q', 'a', 'b'));
  out('blpop', await r.blpop('q', 1));
  out('eval', await r.eval('return {KEYS[1], ARGV[1], 3, {ok="fine"}}', 1, 'x', 'y'));
  out('pipeline', await r.pipeline().incr('n').incrby('n', 5).exec());
  out('multi', await r.multi().set('a', 1).get('a').exec());
  out('error', await r.lpush('k', 'x').catch((e) => e.message));
  out('zadd/zrange', [await r.zadd('z', 1.5, 'm', 2, 'n'), await r.zrange('z', 0, -1, 'WITHSCORES')]);
  out('xadd/xlen', [typeof (await r.xadd('s', '*', 'f', 'v')), await r.xlen('s')]);
  r.disconnect();

  const c = createClient({ url: `redis://127.0.0.1:${port}`, RESP: 3 });
  await c.connect();
  out('hset', await c.hSet('h', { a: '1', b: '2' }));
  out('hgetall', { ...(await c.hGetAll('h')) });
  out('zscore', await c.zScore('z', 'm'));
  out('smembers', (await c.sMembers('missing')).length);
  const sub = c.duplicate();
  await sub.connect();
  const got = new Promise((resolve) => sub.subscribe('ch', resolve));
  await new Promise((resolve) => setTimeout(resolve, 50));
  out('publish', await c.publish('ch', 'hello'));
  out('message', await got);
  await sub.quit();
  await c.quit();
})().catch((e) => { console.error('ERROR', e); process.exit(1); });
