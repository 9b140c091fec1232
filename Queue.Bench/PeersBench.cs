using System.Globalization;
using Microsoft.Extensions.Options;
using Queue.Bench.Harness;
using Queue.Core.Data;
using Queue.Core.Security;

namespace Queue.Bench;

/// <summary>
/// <c>peers</c>: the peers workload (docs/DESIGN.md "Peer speed": one-item jobs of a 1 KiB JSON document; enqueue one per
/// call and 1,000 per call from 16 producers; drains at 1/16/64 workers) against the Release Queue.Api over HTTP, then
/// the same through run-graphile-worker.sh, side by side with the peer-speed ratio targets. Options: <c>--jobs N</c>
/// (100,000), <c>--workers 1,16,64</c>, <c>--drain-max-s S</c> (90), <c>--enq-max-s S</c> (300),
/// <c>--idempotency</c> (an Idempotency-Key per POST /jobs; graphile's addJob has none), <c>--no-peer</c>,
/// <c>--peers-dir DIR</c>, <c>--digests</c> (the costliest statements of each phase, <c>--digests-top N</c> of them, 12 by
/// default; see <see cref="StatementDigests"/>),
/// <c>--client</c> (every call through Queue.Client instead of raw HttpClient requests, so the client's overhead shows;
/// the client always sends an Idempotency-Key, so compare it with <c>--idempotency</c>), <c>--completions-in-flight N</c>
/// (how many completions the drain workers may have unanswered at once, all workers together; by default the workers
/// + 4, as graphile-worker's workers, whose completeJob is fire-and-forget over a pool of workers + 4 connections, and as
/// Queue.Client's <c>WorkAsync</c> by default; 0, or <c>--sequential-completions</c>, answers each completion before
/// the worker's next POST /next), <c>--exchange</c> (raw requests only: each completion claims the worker's next item in
/// the same call, CONTRACT v1.3; implies <c>--sequential-completions</c>, as the next item comes with the answer).
/// </summary>
public static class PeersBench
{
    private const int Producers = 16;
    private const int Batch = 1000;
    private const string PeerTask = "peer";

    public static async Task<int> RunAsync(string[] args)
    {
        if (!Untiered.IsChosen)
        {
            return await Untiered.RunAgainAsync("peers", args);
        }
        var jobs = long.Parse(BenchArgs.Option(args, "--jobs") ?? "100000", CultureInfo.InvariantCulture);
        var workers = (BenchArgs.Option(args, "--workers") ?? "1,16,64").Split(',').Select(w => int.Parse(w, CultureInfo.InvariantCulture)).ToArray();
        var drainMaxS = int.Parse(BenchArgs.Option(args, "--drain-max-s") ?? "90", CultureInfo.InvariantCulture);
        var enqMaxS = int.Parse(BenchArgs.Option(args, "--enq-max-s") ?? "300", CultureInfo.InvariantCulture);
        var idempotency = args.Contains("--idempotency");
        var noPeer = args.Contains("--no-peer");
        var viaClient = args.Contains("--client");
        // null: the workers + 4 of each drain.
        var exchange = args.Contains("--exchange");
        if (exchange && viaClient)
        {
            Console.Error.WriteLine("peers: --exchange drives raw requests; leave out --client");
            return 2;
        }
        int? inFlight = args.Contains("--sequential-completions") || exchange ? 0
            : BenchArgs.Option(args, "--completions-in-flight") is { } k ? int.Parse(k, CultureInfo.InvariantCulture) : null;
        Console.WriteLine($"peers: {jobs:N0} one-item jobs ({{\"i\":n,\"pad\":1,000 x}} as one inline base64 document, 1 task), {Producers} producers, " +
            $"batches of {Batch:N0}, drains at {string.Join('/', workers)} workers (cap {drainMaxS} s), Idempotency-Key {(idempotency || viaClient ? "on" : "off")}, " +
            $"calls through {(viaClient ? "Queue.Client" : "raw HttpClient requests")}{(exchange ? ", each completion claiming the next item in the same call (complete with next)" : inFlight == 0 ? ", each completion answered before the next claim" : $", up to {(inFlight is { } f ? f.ToString(CultureInfo.InvariantCulture) : "workers + 4")} completions in flight beside the claims")}, " +
            $"the load generator {(Untiered.IsOff ? "compiled without tiering" : "tiered")}");

        var digests = args.Contains("--digests") ? int.Parse(BenchArgs.Option(args, "--digests-top") ?? "12", CultureInfo.InvariantCulture) : 0;
        var queue = await RunQueueAsync(jobs, workers, TimeSpan.FromSeconds(drainMaxS), TimeSpan.FromSeconds(enqMaxS), idempotency, digests, viaClient, inFlight, exchange);
        List<PeerResult>? peer = null;
        if (!noPeer)
        {
            Console.WriteLine();
            // The peer's commits wait on the same disk: its stalls during the peer's run, to read the ratios against.
            await using var flushes = new DiskProbe(Path.GetTempPath());
            peer = await GraphileRunner.RunAsync(jobs, workers, drainMaxS, enqMaxS, BenchArgs.Option(args, "--peers-dir"), flushes);
            Console.WriteLine(DiskProbe.Line("while graphile-worker ran", await flushes.StopAsync()));
        }
        return Verdicts(queue, peer, workersWait: inFlight == 0 ? (exchange ? "exchange" : "waiting") : null);
    }

    private static async Task<QueueFigures> RunQueueAsync(long jobs, int[] workers, TimeSpan drainCap, TimeSpan enqCap, bool idempotency, int digests, bool viaClient, int? inFlight,
        bool exchange)
    {
        await using var env = await BenchEnvironment.StartAsync();
        await using var db = SubmitBenchKit.DataSource(env);
        var (_, customerKey) = await SubmitBenchKit.CustomerAsync(db, "peers", [PeerTask]);
        var workerKey = (await new ApiKeyService(db, TimeProvider.System, Options.Create(new AuthOptions())).IssueAsync(KeyRole.Worker, null, "peers", default)).Secret;
        var api = await env.StartServiceAsync("Queue.Api");
        var mariadbPid = env.ServerPid;
        using var http = SubmitBenchKit.Client(api.Url, customerKey, Math.Max(Producers, 2 * workers.Max()) + 4);
        using var client = viaClient ? new PeersClientCalls(new Uri(api.Url), customerKey, workerKey) : null;
        var load = new PeersWorkload(client ?? (IPeersCalls)new PeersHttpCalls(http, customerKey, workerKey, exchange));
        var rss = new List<(string Phase, long Api, long Db)>();
        var cpu = new List<(string Phase, CpuShare Share)>();
        var disk = new List<(string Phase, string Flushes)>();
        var run = Guid.NewGuid().ToString("N")[..8];
        string? Idem(string phase) => idempotency ? $"{run}-{phase}" : null;

        async Task<T> Measure<T>(string phase, Func<Task<T>> body, Func<T, long> items)
        {
            var digested = digests > 0 && await StatementDigests.ResetAsync(db);
            await using var apiRss = new RssSampler(api.RssBytes);
            await using var dbRss = new RssSampler(() => RssOf(mariadbPid));
            await using var flushes = new DiskProbe(env.Server.Directory);
            var before = CpuShare.Read(api.Pid, mariadbPid);
            var result = await body();
            cpu.Add((phase, CpuShare.Read(api.Pid, mariadbPid).Since(before, items(result))));
            rss.Add((phase, apiRss.Peak, dbRss.Peak));
            disk.Add((phase, await flushes.StopAsync()));
            if (digested)
            {
                await StatementDigests.PrintAsync(db, phase, digests);
            }
            return result;
        }

        // Warm-up on its own task, drained to nothing: JIT, pools, key cache, buffer pool pages, both paths.
        var warm = await load.EnqueueAsync("warm", 320, 1, Producers, enqCap, Idem("warm"));
        var warmBatch = await load.EnqueueAsync("warm", 200, 200, 1, enqCap, Idem("warm-batch"));
        await load.DrainAsync("warm", Producers, warm.Items + warmBatch.Items, drainCap, Producers + 4);
        Console.WriteLine($"Queue.Api {api.Url}, warmed up; idle RSS {api.RssBytes() / 1048576.0:F0} MB, mariadbd {RssOf(mariadbPid) / 1048576.0:F0} MB");

        // Batch first on its own task, then cancelled: the single-job phase starts from an empty queue, as each peer
        // phase starts from a truncated table.
        var batch = await Measure("enqueue-batch", () => load.EnqueueAsync("batch", jobs, Batch, Producers, enqCap, Idem("batch")), r => r.Items);
        Report.Row($"enqueue-batch ({Batch:N0} docs per POST /jobs)", batch.PerSecond, batch.Latency, rss[^1].Api, "items/s");
        await load.CancelAsync(batch.JobIds);

        var single = await Measure("enqueue-single", () => load.EnqueueAsync(PeerTask, jobs, 1, Producers, enqCap, Idem("single")), r => r.Items);
        Report.Row($"enqueue-single ({Producers} producers)", single.PerSecond, single.Latency, rss[^1].Api, "jobs/s");
        var window = (int)Math.Min(1000, Math.Max(1, single.Ends.Length / 10));
        var shallow = single.Window(0, window);
        var deep = single.Window(single.Ends.Length - window, single.Ends.Length);
        var deepLabel = $"{single.Ends.Length - window:N0}-{single.Ends.Length:N0} queued";
        Report.Row($"  first {window:N0} (0-{window:N0} queued)", shallow.Rate, shallow.P50, shallow.P99, rss[^1].Api, "jobs/s");
        Report.Row($"  last {window:N0} ({deepLabel})", deep.Rate, deep.P50, deep.P99, rss[^1].Api, "jobs/s");

        var queued = single.Items;
        var drains = new List<DrainResult>();
        foreach (var n in workers)
        {
            if (queued < jobs)
            {
                // One-item jobs through the single path, like the peer's top-up makes one-row jobs: a 1,000-document
                // POST would make one job of 1,000 items, which is a different (cheaper) drain.
                var topUp = await load.EnqueueAsync(PeerTask, jobs - queued, 1, Producers, enqCap, Idem($"topup-{n}"));
                queued += topUp.Items;
                Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"  topped up {topUp.Items:N0} jobs in {topUp.Seconds:F1} s ({topUp.PerSecond:N0} jobs/s)"));
            }
            var drain = await Measure($"drain-{n}", () => load.DrainAsync(PeerTask, n, queued, drainCap, inFlight ?? n + 4), r => r.Completed);
            queued -= drain.Completed;
            drains.Add(drain);
            Report.Row($"drain {n} worker{(n == 1 ? "" : "s")}: POST /next", drain.PerSecond, drain.Claims, rss[^1].Api, "items/s");
            Report.Row($"  complete", drain.PerSecond, drain.Completes, rss[^1].Api, "items/s");
            var empties = drain.EmptyWhileQueued > 0 ? $"; {drain.EmptyWhileQueued:N0} empty /next answers while items were still unclaimed" : "";
            Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"  {drain.Completed:N0} of {drain.Queued:N0} completed in {drain.Seconds:F1} s{(drain.Capped ? " (capped)" : "")}{empties}"));
        }

        Console.WriteLine();
        foreach (var (phase, apiPeak, dbPeak) in rss)
        {
            Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"RSS peak {phase,-16} Queue.Api {apiPeak / 1048576.0,6:F0} MB   mariadbd {dbPeak / 1048576.0,6:F0} MB"));
        }
        foreach (var (phase, share) in cpu)
        {
            Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"CPU per item {phase,-16} {share}"));
        }
        // The raw limit of every commit-bound latency above (enqueue-p99-deep): the disk's flushes in the same seconds.
        Console.WriteLine($"disk flush: {DiskProbe.What}, beside each phase");
        foreach (var (phase, flushes) in disk)
        {
            Console.WriteLine($"disk flush {phase,-16} {flushes}");
        }
        if (load.Retried503 > 0)
        {
            Console.WriteLine($"503 answers retried after Retry-After: {load.Retried503:N0}");
        }
        return new QueueFigures(single, shallow, deep, window, deepLabel, batch, drains) { Cpu = cpu };
    }

    /// <param name="workersWait">Null for workers that keep completions in flight; "waiting" (each completion answered
    /// before the next /next) or "exchange" (complete with next): their drains are named so, against the issue's goal
    /// of 1.0x graphile-worker for a worker that waits for every answer.</param>
    private static int Verdicts(QueueFigures q, List<PeerResult>? peer, string? workersWait)
    {
        var report = new Report();
        PeerResult? Peer(string phase, int? n = null) => peer?.FirstOrDefault(p => p.Phase == phase && (n is null || p.Workers == n));

        Console.WriteLine();
        Console.WriteLine($"{"workload",-40} {"Queue",-22} {"graphile-worker",-22} Queue / peer");
        void Line(string workload, double mine, string unit, PeerResult? theirs, bool capped = false) =>
            Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                $"{workload,-40} {$"{mine:N0} {unit}{(capped ? " (capped)" : "")}",-22} {(theirs is null ? "-" : $"{theirs.JobsPerSecond:N0} jobs/s{(theirs.Capped ? " (capped)" : "")}"),-22} {(theirs is null ? "-" : $"{mine / theirs.JobsPerSecond:F2}x")}"));
        Line($"enqueue-single, {Producers} producers", q.Single.PerSecond, "jobs/s", Peer("enqueue-single"), q.Single.Capped);
        Line($"  first {q.Window:N0} (0-{q.Window:N0} queued)", q.Shallow.Rate, "jobs/s", null);
        Line($"  last {q.Window:N0} ({q.DeepLabel})", q.Deep.Rate, "jobs/s", null);
        Line($"enqueue-batch, {Batch:N0} per call", q.Batch.PerSecond, "items/s", Peer("enqueue-batch"), q.Batch.Capped);
        foreach (var d in q.Drains)
        {
            Line($"drain, {d.Workers} worker{(d.Workers == 1 ? "" : "s")}", d.PerSecond, "jobs/s", Peer("drain", d.Workers), d.Capped);
        }

        void Ratio(string name, double mine, PeerResult? theirs, string unit, double? floor, double? stretch)
        {
            var measured = theirs is null ? "no graphile-worker figure" : string.Create(CultureInfo.InvariantCulture, $"{mine / theirs.JobsPerSecond:F2}x ({mine:N0} {unit} vs {theirs.JobsPerSecond:N0} jobs/s)");
            var ratio = theirs is null ? 0 : mine / theirs.JobsPerSecond;
            if (floor is { } f)
            {
                report.Target(name, measured, string.Create(CultureInfo.InvariantCulture, $">= {f:F1}x graphile-worker"), ratio >= f);
            }
            if (stretch is { } s)
            {
                report.Stretch(name, measured, string.Create(CultureInfo.InvariantCulture, $">= {s:F1}x graphile-worker"), ratio >= s);
            }
        }
        if (peer is not null)
        {
            Ratio("enqueue-single-vs-graphile", q.Single.PerSecond, Peer("enqueue-single"), "jobs/s", 1.0, 2.0);
            Ratio("enqueue-batch-items-vs-graphile-jobs", q.Batch.PerSecond, Peer("enqueue-batch"), "items/s", 1.0, 1.5);
            foreach (var d in q.Drains)
            {
                if (workersWait is not null)
                {
                    Ratio($"drain-{d.Workers}-{workersWait}-vs-graphile", d.PerSecond, Peer("drain", d.Workers), "jobs/s", null, 1.0);
                    continue;
                }
                Ratio($"drain-{d.Workers}-vs-graphile", d.PerSecond, Peer("drain", d.Workers), "jobs/s", d.Workers == 1 ? 0.5 : 1.0, d.Workers == 1 ? 1.0 : 2.0);
            }
        }
        CpuPerJob(report, q, Peer);
        var flat = q.Deep.Rate / q.Shallow.Rate;
        report.Target("enqueue-depth-flatness", string.Create(CultureInfo.InvariantCulture,
            $"{flat:F2}x ({q.Deep.Rate:N0} jobs/s at {q.DeepLabel} vs {q.Shallow.Rate:N0} at 0-{q.Window:N0})"), ">= 0.9x", flat >= 0.9);
        report.Target("enqueue-p99-deep", string.Create(CultureInfo.InvariantCulture, $"{q.Deep.P99:F1} ms at {q.DeepLabel}"), "<= 50 ms", q.Deep.P99 <= 50);
        return report.Finish();
    }

    /// <summary>
    /// The CPU of one job's whole life, enqueued one per call and drained at N workers, for Queue (Api and mariadbd) and
    /// for graphile-worker (node and PostgreSQL), each read from /proc over the same phases. The peer's node process also
    /// runs its producers and workers, which in Queue's figure are the load generator's, left out.
    /// </summary>
    private static void CpuPerJob(Report report, QueueFigures q, Func<string, int?, PeerResult?> peer)
    {
        var enqueue = q.Cpu.FirstOrDefault(c => c.Phase == "enqueue-single").Share;
        if (enqueue is null)
        {
            return;
        }
        double Us(TimeSpan t, long items) => items == 0 ? 0 : t.TotalMicroseconds / items;
        foreach (var d in q.Drains)
        {
            var drain = q.Cpu.FirstOrDefault(c => c.Phase == $"drain-{d.Workers}").Share;
            if (drain is null)
            {
                continue;
            }
            var api = Us(enqueue.Api, enqueue.Items) + Us(drain.Api, drain.Items);
            var db = Us(enqueue.Db, enqueue.Items) + Us(drain.Db, drain.Items);
            var (e, r) = (peer("enqueue-single", null), peer("drain", d.Workers));
            double? node = e?.CpuNodeUs + r?.CpuNodeUs;
            double? pg = e?.CpuPostgresUs + r?.CpuPostgresUs;
            var theirs = node is null || pg is null ? "graphile-worker: no CPU figure"
                : string.Create(CultureInfo.InvariantCulture, $"graphile-worker node {node:F0} us + postgres {pg:F0} us = {node + pg:F0} us");
            Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                $"CPU per job, enqueue + drain-{d.Workers}: Queue.Api {api:F0} us + mariadbd {db:F0} us = {api + db:F0} us; {theirs}"));
            if (d.Workers == 16 && node is not null && pg is not null)
            {
                var ratio = (api + db) / (node.Value + pg.Value);
                report.Stretch("cpu-per-job-vs-graphile", string.Create(CultureInfo.InvariantCulture, $"{ratio:F2}x ({api + db:F0} us vs {node + pg:F0} us, enqueue + drain-16)"),
                    "<= 1.0x graphile-worker", ratio <= 1.0);
            }
        }
    }

    private static long RssOf(int pid)
    {
        foreach (var line in File.ReadLines($"/proc/{pid}/status"))
        {
            if (line.StartsWith("VmRSS:", StringComparison.Ordinal))
            {
                return long.Parse(line.Split(' ', StringSplitOptions.RemoveEmptyEntries)[1], CultureInfo.InvariantCulture) * 1024;
            }
        }
        return 0;
    }

    private sealed record QueueFigures(EnqueueResult Single, (double Rate, double P50, double P99) Shallow, (double Rate, double P50, double P99) Deep,
        int Window, string DeepLabel, EnqueueResult Batch, List<DrainResult> Drains)
    {
        /// <summary>CPU of the Api, mariadbd and the load generator over each phase.</summary>
        public IReadOnlyList<(string Phase, CpuShare Share)> Cpu { get; init; } = [];
    }
}
