// One BullMQ job's life, N times, against the server on PORT: Queue.add with a job's usual
// options, then one Worker (concurrency 1) takes and completes every job. bench/bullmq_suite/
// job_cost.py reads the server's CPU around it. Needs the npm package (run.sh installs it).
//
//   node job_cost.js PORT [N]
const { Queue, Worker } = require('bullmq');

const port = Number(process.argv[2]);
const count = Number(process.argv[3] || 2000);
const connection = { host: '127.0.0.1', port };
const options = {
  attempts: 3, backoff: { type: 'exponential', delay: 1000 },
  removeOnComplete: 1000, removeOnFail: 1000,
};

(async () => {
  const queue = new Queue('job-cost', { connection });
  await queue.obliterate({ force: true });
  for (let i = 0; i < count; i++) {
    await queue.add('job', { i, payload: 'x'.repeat(100) }, options);
  }
  let done = 0;
  await new Promise((resolve) => {
    const worker = new Worker('job-cost', async (job) => job.data.i, { connection, concurrency: 1 });
    worker.on('completed', () => {
      done += 1;
      if (done === count) worker.close().then(resolve);
    });
  });
  await queue.close();
})().catch((err) => { console.error(err); process.exit(1); });
