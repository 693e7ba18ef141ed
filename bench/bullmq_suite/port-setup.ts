// BullMQ's tests connect with `new IORedis(process.env.REDIS_HOST || 'localhost')`, so always
// to port 6379: ioredis's default port becomes $REDIS_PORT, and the suite reaches any server.
// eslint-disable-next-line @typescript-eslint/no-var-requires
const { DEFAULT_REDIS_OPTIONS } = require('ioredis/built/redis/RedisOptions');
if (process.env.REDIS_PORT) {
  DEFAULT_REDIS_OPTIONS.port = Number(process.env.REDIS_PORT);
}
