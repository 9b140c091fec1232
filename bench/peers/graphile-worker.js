// Queue's peer benchmark for graphile-worker: the ../shared/peers workload, with the CPU each phase cost the peer
// (node and PostgreSQL) per job, so that Queue.Bench peers can put the two CPU budgets side by side.
// Run through run-graphile-worker.sh (DATABASE_URL, PGPID, NODE_PATH). One "RESULT {json}" line per phase.
'use strict';
const fs = require('fs');
const { Pool } = require('pg');
const { makeWorkerUtils, run, Logger } = require('graphile-worker');
const { EventEmitter } = require('events');

const cfg = {
  jobs: +(process.env.JOBS || 100000),
  producers: +(process.env.PRODUCERS || 16),
  batch: +(process.env.BATCH || 1000),
  workers: (process.env.WORKERS || '1,16,64').split(',').map(Number),
  enqMaxS: +(process.env.ENQ_MAX_S || 300),
  drainMaxS: +(process.env.DRAIN_MAX_S || 90),
};
const PAD = 'x'.repeat(1000);
const payload = (i) => ({ i, pad: PAD }); // about 1 KiB of JSON, as Queue's one-document jobs
const now = () => Number(process.hrtime.bigint()) / 1e6;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// CPU of PostgreSQL in microseconds: the postmaster, the children it has reaped, and its live backends.
const TICK_US = 1e6 / 100; // CLK_TCK is 100 on Linux
function stat(pid) {
  try {
    const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' '); // fields from 3 on
    return { ppid: +f[1], own: +f[11] + +f[12], reaped: +f[13] + +f[14] };
  } catch { return null; }
}
function postgresCpuUs() {
  const root = +process.env.PGPID;
  const top = stat(root);
  if (!top) return 0;
  let ticks = top.own + top.reaped;
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d) || +d === root) continue;
    const s = stat(d);
    if (s && s.ppid === root) ticks += s.own;
  }
  return ticks * TICK_US;
}
function cpuMeter() {
  const node0 = process.cpuUsage(); const pg0 = postgresCpuUs();
  return () => {
    const n = process.cpuUsage(node0);
    return { node_us: n.user + n.system, postgres_us: postgresCpuUs() - pg0 };
  };
}
function cpuPerJob(cpu, jobs) {
  return jobs > 0 ? { cpu_node_us_per_job: cpu.node_us / jobs, cpu_postgres_us_per_job: cpu.postgres_us / jobs } : {};
}

async function produce(total, producers, per, maxS, fn) {
  let next = 0, done = 0, capped = false;
  const t0 = now(), deadline = t0 + maxS * 1000;
  async function loop() {
    while (next < total) {
      if (now() > deadline) { capped = true; return; }
      const start = next; const count = Math.min(per, total - start); next += count;
      await fn(start, count);
      done += count;
    }
  }
  await Promise.all(Array.from({ length: producers }, loop));
  return { done, ms: now() - t0, capped };
}
async function waitFor(pred, maxMs, everyMs) {
  const end = now() + maxMs;
  while (now() < end) { if (await pred()) return true; await sleep(everyMs); }
  return false;
}
function emit(result) { result.at = new Date().toISOString(); console.log('RESULT ' + JSON.stringify(result)); }

const version = require('graphile-worker/package.json').version;
const mkPool = (max) => { const p = new Pool({ connectionString: process.env.DATABASE_URL, max }); p.on('error', (e) => console.error('[pool]', e.message)); return p; };
const quiet = new Logger(() => (level, message) => { if (level === 'error') console.error('[gw]', message); });
const base = { peer: 'graphile-worker', version, db: 'PostgreSQL ' + process.env.PG_VERSION, durability: process.env.PG_DURABILITY };

async function main() {
  const pool = mkPool(cfg.producers + 4);
  const utils = await makeWorkerUtils({ pgPool: pool, logger: quiet });
  await utils.migrate();
  const sql = (q, a) => pool.query(q, a);
  const depth = async () => +(await sql('select count(*) from graphile_worker._private_jobs')).rows[0].count;
  const clear = () => sql('truncate graphile_worker._private_jobs, graphile_worker._private_job_queues');
  const settle = async () => { await sql('vacuum analyze graphile_worker._private_jobs'); await sql('checkpoint'); };
  const addBatch = (start, count) => utils.addJobs(Array.from({ length: count }, (_, k) => ({ identifier: 'noop', payload: payload(start + k) })));

  await clear(); await settle();
  let cpu = cpuMeter();
  let r = await produce(cfg.jobs, cfg.producers, 1, cfg.enqMaxS, (i) => utils.addJob('noop', payload(i)));
  emit({ ...base, phase: 'enqueue-single', producers: cfg.producers, jobs: r.done, seconds: r.ms / 1000, jobs_per_s: r.done / (r.ms / 1000), capped: r.capped, ...cpuPerJob(cpu(), r.done) });

  await clear(); await settle();
  cpu = cpuMeter();
  r = await produce(cfg.jobs, cfg.producers, cfg.batch, cfg.enqMaxS, addBatch);
  emit({ ...base, phase: 'enqueue-batch', producers: cfg.producers, batch: cfg.batch, jobs: r.done, seconds: r.ms / 1000, jobs_per_s: r.done / (r.ms / 1000), capped: r.capped, ...cpuPerJob(cpu(), r.done) });

  for (const n of cfg.workers) {
    const have = await depth();
    if (have < cfg.jobs) await produce(cfg.jobs - have, cfg.producers, cfg.batch, cfg.enqMaxS, (s, c) => addBatch(have + s, c));
    await settle();
    const before = await depth();
    const events = new EventEmitter();
    let completed = 0;
    events.on('job:complete', () => { completed++; });
    cpu = cpuMeter();
    const t0 = now();
    const runner = await run({ pgPool: mkPool(n + 4), concurrency: n, noHandleSignals: true, pollInterval: 1000, logger: quiet, events, taskList: { noop: async () => {} } });
    const full = await waitFor(() => completed >= before, cfg.drainMaxS * 1000, 20);
    // completeJob is fire-and-forget in graphile-worker: the drain ends when the completions are committed.
    if (full) await waitFor(async () => (await depth()) === 0, 30000, 20);
    const tEnd = now();
    const used = cpu();
    await runner.stop();
    const done = before - (await depth());
    emit({ ...base, phase: 'drain', workers: n, queued: before, jobs: done, seconds: (tEnd - t0) / 1000, jobs_per_s: done / ((tEnd - t0) / 1000), capped: !full, ...cpuPerJob(used, done) });
  }
  await utils.release(); await pool.end();
}
main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
