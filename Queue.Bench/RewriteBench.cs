using System.Diagnostics;
using System.Globalization;
using Dapper;
using HdrHistogram;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Options;
using MySqlConnector;
using Queue.Bench.Harness;
using Queue.Core.Claims;
using Queue.Core.Data;
using Queue.Core.Hosting;
using Queue.Core.Ordering;
using Queue.Core.Security;
using Queue.Bench.Sql;
using Queue.Core.Sql;

namespace Queue.Bench;

/// <summary>
/// <c>rewrite</c>: (1) the ordering rewrite (Core's OrderingRewriter, as the Scheduler runs it) over 100k jobs with
/// work, alternating modes so every lane changes, each once purge has caught up with the one before (as an hourly
/// rewrite finds it); (2) claim latency with the real Core claim transaction (one item per
/// READ COMMITTED transaction, as ClaimBench's raw figure, each item completed after its claim, untimed) at 16
/// claimers, without a rewrite and while rewrites run back to back; (3) the same with claims offered at a fixed rate, 60 %
/// of (2)'s without a rewrite, each timed from when it was due: a box with room to spare, where (2) uses every cycle.
/// Options: <c>--jobs N</c> (default 100000), <c>--seconds N</c> per claim phase (default 15),
/// <c>--claimers N</c> (default 16), <c>--method swap|in-place</c> (Ordering:RewriteMethod, default swap), <c>--digests</c> (the costliest statements of each claim phase; see
/// <see cref="StatementDigests"/>).
/// </summary>
public static class RewriteBench
{
    private const string Task = "rw";

    public static async Task<int> RunAsync(string[] args)
    {
        var jobs = Arg(args, "--jobs", 100_000);
        var seconds = Arg(args, "--seconds", 15);
        var claimers = Arg(args, "--claimers", 16);
        var digests = args.Contains("--digests");
        var method = BenchArgs.Option(args, "--method") ?? OrderingOptions.Swap;
        if (method is not (OrderingOptions.Swap or OrderingOptions.InPlace))
        {
            Console.Error.WriteLine($"--method must be {OrderingOptions.Swap} or {OrderingOptions.InPlace}");
            return 2;
        }
        Console.WriteLine($"rewrite method: {method}");
        var report = new Report();
        await using var env = await BenchEnvironment.StartAsync();
        await using var db = new MySqlDataSourceBuilder(QueueDatabase.Normalize(env.ConnectionString)).Build();
        var tenant = await new TenantService(db, TimeProvider.System).CreateAsync("bench", new TenantSettings([Task]), default);

        var seedWatch = Stopwatch.StartNew();
        // 10 items per job: every job keeps work through the claim phases, and claimers rarely drain a lane (a drained
        // lane's hint cannot be refreshed while a rewrite holds it, so it would be probed again by every claim).
        await SeedAsync(db, tenant.Id, jobs, perJob: 10);
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"seeded {jobs:N0} jobs with work (one lane each) in {seedWatch.Elapsed.TotalSeconds:F0} s"));

        // The rewriter's own clock steps one period per rewrite, so each rewrite flips the mode and rewrites every lane.
        var clock = new SteppedClock(DateTimeOffset.UtcNow);
        var calendar = new OrderingCalendar(clock, Options.Create(new OrderingOptions()));
        // The rewriter's warnings and errors go to the console: a swap dropped and built again (event 4006) shows there.
        using var logs = LoggerFactory.Create(b => b.AddSimpleConsole(o => o.SingleLine = true).SetMinimumLevel(LogLevel.Warning));
        var rewriter = new OrderingRewriter(db, calendar, new OrderingLanes(calendar, clock), clock, Options.Create(new OrderingOptions { RewriteMethod = method }), logs.CreateLogger<OrderingRewriter>());
        async Task<RewriteResult> RewriteNextAsync()
        {
            var r = await rewriter.RewriteAsync("bench");
            clock.Now = calendar.At(clock.Now).End + TimeSpan.FromSeconds(1);
            return r;
        }

        // Figure 1: rewrites alone.
        await RewriteNextAsync(); // warm-up: buffer pool, plans
        var alone = Report.NewHistogram();
        var worst = TimeSpan.Zero;
        var ranked = 0;
        var rankedAll = true;
        await using var aloneDisk = new DiskProbe(env.Server.Directory);
        for (var i = 0; i < 4; i++)
        {
            // Rewrites run once a period (an hour by default), long after purge removed the previous one's old index
            // entries and row versions. Back to back, each rewrite also paid for the last one's purge running beside it
            // (about 2 s of purge at 100k jobs): 1.99-2.05 s worst of 4 against 1.69-1.89 s once purge caught up.
            // Figure 2 still runs rewrites back to back, under claims.
            var (purge, _, _) = await Purge.UntilHistoryBelowAsync(db, 1, TimeSpan.FromSeconds(jobs / 2_000 + 30), TimeSpan.FromMilliseconds(200));
            var r = await RewriteNextAsync();
            alone.RecordValue((long)r.Duration.TotalMicroseconds);
            worst = r.Duration > worst ? r.Duration : worst;
            ranked = r.JobsRanked;
            // A rewrite that ranks fewer jobs than were seeded did not do the work it is timed for.
            rankedAll &= r.JobsRanked == jobs;
            Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                $"  rewrite to {r.Period.ModeName,-8}: {r.JobsRanked:N0} jobs ranked, {r.LanesUpdated:N0} lanes changed, {r.Duration.TotalMilliseconds:F0} ms (after {purge.TotalSeconds:F1} s for purge)"));
        }
        Report.Row($"(1) rewrite, {ranked / 1000}k jobs, no load", ranked / (alone.GetMean() / 1e6), alone, 0, "jobs/s");
        // Each rewrite ends in one commit, and a stalled flush lands in its time whole.
        Console.WriteLine("    " + DiskProbe.Line("beside them", await aloneDisk.StopAsync()));

        // Figure 2: claims without and during rewrites.
        var engine = new ClaimEngine(db, new SeedLaneSelector(), TimeProvider.System, new ClaimCounters());
        var empties = new EmptyAnswers(db);
        await using var leases = new LeaseService(db, TimeProvider.System, new LaneJanitor(db, new BackgroundWork(), NullLogger<LaneJanitor>.Instance));
        await ClaimAsync(engine, leases, empties, claimers, TimeSpan.FromSeconds(2), null); // warm-up
        // Each phase's claims commit, so a disk that stalls in one phase and not the other moves the p99 ratio: the
        // disk's own flushes are printed beside each (docs/DESIGN.md "Commit latency is the disk's").
        async Task<(double Rate, HistogramBase Latency, HistogramBase Rewrites, string Disk)> Phase(string name, Func<Task<RewriteResult>>? rewrite, double? offered = null)
        {
            var digested = digests && await StatementDigests.ResetAsync(db);
            await using var flushes = new DiskProbe(env.Server.Directory);
            var (rate, latency, rewrites) = await ClaimAsync(engine, leases, empties, claimers, TimeSpan.FromSeconds(seconds), rewrite, offered);
            var disk = await flushes.StopAsync();
            if (digested)
            {
                await StatementDigests.PrintAsync(db, name);
            }
            return (rate, latency, rewrites, disk);
        }
        var quiet = await Phase("claims", null);
        Report.Row($"(2) claims, {claimers} claimers, no rewrite", quiet.Rate, quiet.Latency, 0, "claims/s");
        Console.WriteLine("    " + DiskProbe.Line("beside them", quiet.Disk));
        var during = await Phase("claims during rewrites", RewriteNextAsync);
        Report.Row($"(2) claims, {claimers} claimers, rewrites running", during.Rate, during.Latency, 0, "claims/s");
        Console.WriteLine("    " + DiskProbe.Line("beside them", during.Disk));
        Report.Row($"    the {during.Rewrites.TotalCount} rewrites under claim load", ranked / (during.Rewrites.GetMean() / 1e6), during.Rewrites, 0, "jobs/s");

        // Figure 3: the same at a load the box carries with room to spare, claims offered at a fixed rate (60 % of the
        // claims above without a rewrite), each timed from when it was due, so a claim held up delays none after it.
        // Above, the claimers use every cycle both cores have, and whatever a rewrite takes shows in their p99.
        var offered = quiet.Rate * 0.6;
        var quietOffered = await Phase("claims offered", null, offered);
        Report.Row(string.Create(CultureInfo.InvariantCulture, $"(3) claims offered at {offered:N0}/s, no rewrite"), quietOffered.Rate, quietOffered.Latency, 0, "claims/s");
        var duringOffered = await Phase("claims offered during rewrites", RewriteNextAsync, offered);
        Report.Row(string.Create(CultureInfo.InvariantCulture, $"(3) claims offered at {offered:N0}/s, rewrites running"), duringOffered.Rate, duringOffered.Latency, 0, "claims/s");
        Console.WriteLine("    " + DiskProbe.Line("beside them", duringOffered.Disk));
        var (p99QuietOffered, p99DuringOffered) = (Report.P(quietOffered.Latency, 99), Report.P(duringOffered.Latency, 99));
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"    claim p99 during rewrites at 60 % load: {p99DuringOffered / p99QuietOffered:F2}x ({p99DuringOffered:F1} ms vs {p99QuietOffered:F1} ms)"));

        // The goals: 100k jobs under 2 s, 1M under 20 s, so 20 us per job.
        var goal = TimeSpan.FromSeconds(jobs * 20e-6);
        var rankedNote = rankedAll ? "" : string.Create(CultureInfo.InvariantCulture, $", but a rewrite ranked {ranked:N0} of {jobs:N0} jobs");
        report.Target($"rewrite-{jobs / 1000}k", string.Create(CultureInfo.InvariantCulture, $"{worst.TotalSeconds:F2} s worst of 4, each once purge caught up with the last{rankedNote}"),
            string.Create(CultureInfo.InvariantCulture, $"< {goal.TotalSeconds:0.#} s, every job ranked"), rankedAll && worst < goal);
        var p99Quiet = Report.P(quiet.Latency, 99);
        var p99During = Report.P(during.Latency, 99);
        var ratio = p99During / p99Quiet;
        report.Target("claim-p99-during-rewrite", string.Create(CultureInfo.InvariantCulture,
            $"{p99During:F1} ms vs {p99Quiet:F1} ms without, {ratio:F2}x{rankedNote}"), "<= 1.5x", rankedAll && ratio <= 1.5);
        // Issue "Twice the peer": a rewrite that does not show, at 100k and at 1M jobs.
        report.Stretch($"claim-p99-during-rewrite-{jobs / 1000}k", string.Create(CultureInfo.InvariantCulture,
            $"{ratio:F2}x ({p99During:F1} ms vs {p99Quiet:F1} ms){rankedNote}"), "<= 1.3x", rankedAll && ratio <= 1.3);
        // Every claim had hundreds of thousands of lanes to choose from: an empty answer is a worker sent away with work
        // waiting (each one's snapshot is printed where it happened).
        var claimed = quiet.Latency.TotalCount + during.Latency.TotalCount + quietOffered.Latency.TotalCount + duringOffered.Latency.TotalCount;
        report.Target("no-empty-claims", string.Create(CultureInfo.InvariantCulture, $"{empties.Count} empty answers of {claimed:N0} claims"),
            "0", empties.Count == 0);
        return report.Finish();
    }

    private static async Task SeedAsync(MySqlDataSource db, long tenantId, int jobs, int perJob)
    {
        var now = DateTime.UtcNow;
        await using var conn = await db.OpenConnectionAsync();
        await conn.ExecuteAsync(new CommandDefinition(ClaimBenchSql.SeedJobs, new { TenantId = tenantId, Task, Jobs = jobs, PerJob = perJob, Now = now }, commandTimeout: 600));
        var (first, last) = await conn.QuerySingleAsync<(long First, long Last)>(ClaimBenchSql.JobRange, new { Task });
        await conn.ExecuteAsync(new CommandDefinition(ClaimBenchSql.SeedDocuments, new { First = first, Last = last, Now = now }, commandTimeout: 600));
        for (var j = first; j <= last; j += 50_000)
        {
            await conn.ExecuteAsync(new CommandDefinition(ClaimBenchSql.SeedItems,
                new { Task, PerJob = perJob, First = j, Last = Math.Min(last, j + 49_999), Now = now }, commandTimeout: 600));
        }
        await conn.ExecuteAsync(new CommandDefinition(ClaimBenchSql.SeedLanes, new { Task, First = first, Last = last, Now = now }, commandTimeout: 600));
    }

    /// <summary>
    /// Claims one item per transaction with the real claim code for <paramref name="duration"/>; with
    /// <paramref name="rewrite"/>, rewrites run back to back for the whole window, so every claim overlaps one, and the
    /// claims go on until the first rewrite has ended: at 1M jobs a rewrite under claims takes longer than the window,
    /// and its catch-up and rename would otherwise run with no claim beside them. Each
    /// claimer completes its item before its next claim, untimed, as a worker with no work would: claims that were never
    /// finished kept every head lane they had emptied leased for the lease's 30 minutes, and each walk read all of them
    /// (590 rows per walk in the first phase, 1,349 in the second), so the phase that ran second was measured against
    /// more leases out, not against the rewrite.
    /// </summary>
    private static async Task<(double Rate, HistogramBase Latency, HistogramBase Rewrites)> ClaimAsync(
        ClaimEngine engine, LeaseService leases, EmptyAnswers empties, int claimers, TimeSpan duration, Func<Task<RewriteResult>>? rewrite,
        double? offered = null)
    {
        var latency = Report.NewHistogram();
        var rewrites = Report.NewHistogram();
        long claims = 0;
        long scheduled = 0;
        var rewritesEnded = 0;
        string[] tasks = [Task];
        var watch = Stopwatch.StartNew();
        var rewriting = rewrite is null ? System.Threading.Tasks.Task.CompletedTask : System.Threading.Tasks.Task.Run(async () =>
        {
            while (watch.Elapsed < duration)
            {
                var r = await rewrite();
                rewrites.RecordValue(Math.Max(1, (long)r.Duration.TotalMicroseconds));
                Interlocked.Increment(ref rewritesEnded);
            }
        });
        await System.Threading.Tasks.Task.WhenAll(Enumerable.Range(0, claimers).Select(_ => System.Threading.Tasks.Task.Run(async () =>
        {
            // A rewrite loop that failed ends the phase too: waiting for its first rewrite to end would never stop.
            while (watch.Elapsed < duration || (rewrite is not null && Volatile.Read(ref rewritesEnded) == 0 && !rewriting.IsCompleted))
            {
                var t0 = Stopwatch.GetTimestamp();
                if (offered is { } perSecond)
                {
                    // Claim k is due k / rate seconds into the phase. One that starts late is timed from when it was due,
                    // so a claim held up delays none after it unmeasured; one that is early waits (the timer's slack is
                    // not the claim's).
                    var due = TimeSpan.FromSeconds((Interlocked.Increment(ref scheduled) - 1) / perSecond);
                    var early = due - watch.Elapsed;
                    if (early > TimeSpan.Zero)
                    {
                        await System.Threading.Tasks.Task.Delay(early);
                        t0 = Stopwatch.GetTimestamp();
                    }
                    else
                    {
                        t0 -= (long)(-early.TotalSeconds * Stopwatch.Frequency);
                    }
                }
                var taken = await RawClaim.TryTakeAsync(engine, tasks, "bench");
                Report.Record(latency, t0);
                Interlocked.Increment(ref claims);
                if (taken.Count == 0)
                {
                    await empties.NoteAsync(watch.Elapsed);
                    continue;
                }
                await leases.CompleteAsync([.. taken.Select(i => new LeaseRef(i.Id, i.Token))], CancellationToken.None);
            }
        })));
        var elapsed = watch.Elapsed;
        await rewriting;
        return (claims / elapsed.TotalSeconds, latency, rewrites);
    }

    private static int Arg(string[] args, string name, int fallback)
    {
        var i = Array.IndexOf(args, name);
        return i >= 0 && i + 1 < args.Length ? int.Parse(args[i + 1], CultureInfo.InvariantCulture) : fallback;
    }

    /// <summary>
    /// Claims that came back empty although the bench's lanes never run dry; the first few print what the ordering
    /// and the swap looked like right after, the rest are only counted.
    /// </summary>
    private sealed class EmptyAnswers(MySqlDataSource db)
    {
        private const int Described = 3;
        private int count;

        public int Count => Volatile.Read(ref count);

        public async Task NoteAsync(TimeSpan intoPhase)
        {
            if (Interlocked.Increment(ref count) > Described)
            {
                return;
            }
            var now = DateTime.UtcNow;
            await using var conn = await db.OpenConnectionAsync();
            var claimable = await conn.ExecuteScalarAsync<long>(ClaimBenchSql.ClaimableLanes, new { Now = now });
            var swap = await conn.ExecuteScalarAsync<string>(ClaimBenchSql.SwapState);
            var head = string.Join(" | ", await conn.QueryAsync<string>(ClaimBenchSql.HeadLanes));
            var lanes = await conn.QuerySingleAsync<string>(ClaimBenchSql.LanesByIndex);
            Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                $"    EMPTY claim {intoPhase.TotalSeconds:F1} s into the phase ({now:HH:mm:ss.fff}): {claimable:N0} lanes claimable just after; {swap}; head: {head}; lanes by index: {lanes}"));
        }
    }

    /// <summary>A clock the benchmark moves by hand, so consecutive rewrites land in consecutive periods.</summary>
    private sealed class SteppedClock(DateTimeOffset start) : TimeProvider
    {
        public DateTimeOffset Now { get; set; } = start;

        public override DateTimeOffset GetUtcNow() => Now;
    }
}
