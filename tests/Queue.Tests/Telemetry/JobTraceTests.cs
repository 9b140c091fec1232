using System.Diagnostics;
using Dapper;
using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using OpenTelemetry;
using OpenTelemetry.Metrics;
using OpenTelemetry.Trace;
using Queue.Api.Infrastructure;
using Microsoft.Extensions.DependencyInjection;
using Queue.Core.Claims;
using Queue.Core.Ordering;
using Queue.Core.Telemetry;
using Queue.Tests.Infrastructure;
using Queue.Tests.Jobs;
using Queue.Tests.Work;

namespace Queue.Tests.Telemetry;

/// <summary>
/// A job's life as OpenTelemetry sees it, through the real Api: one trace per job from submit to done. The tests of
/// this class run one after the other, and no other test listens to the "Queue" source, so "nobody listens" holds
/// while the no-listener test runs. A listener hears every test class of the process, each with a database of its
/// own: this class's job ids start far above theirs (<see cref="TracedApiFixture"/>), so a job id names one of its jobs.
/// </summary>
public sealed class JobTraceTests(TracedApiFixture fx) : IClassFixture<TracedApiFixture>
{
    /// <summary>A job id that neither this class's database nor any other test's reaches, for the spans made by hand.</summary>
    private const long HandMadeJobId = TracedApiFixture.FirstJobId - 1;

    [Fact]
    public async Task A_job_submitted_claimed_and_completed_is_one_trace_from_submit_to_done_with_the_ids_tagged()
    {
        var spans = new List<Activity>();
        using (Sdk.CreateTracerProviderBuilder().AddSource(QueueTracing.Name).AddInMemoryExporter(spans).Build())
        {
            var (tenant, jobId, claimed) = await LiveAJobAsync("traced", complete: true);

            var mine = Of(spans, jobId);
            var trace = QueueTracing.JobContext(jobId).TraceId;
            Assert.All(mine, a => Assert.Equal(trace, a.TraceId));
            Assert.Equal([QueueTracing.Submit], mine.Where(a => a.OperationName == QueueTracing.Submit).Select(a => a.OperationName));
            var claims = mine.Where(a => a.OperationName == QueueTracing.Claim).ToList();
            var completions = mine.Where(a => a.OperationName == QueueTracing.Complete).ToList();
            Assert.Equal(claimed.Order(), claims.Select(a => (long)a.GetTagItem(QueueTracing.ItemId)!).Order());
            Assert.Equal(claimed.Order(), completions.Select(a => (long)a.GetTagItem(QueueTracing.ItemId)!).Order());
            Assert.All(claims.Concat(completions), a =>
            {
                Assert.Equal(tenant, a.GetTagItem(QueueTracing.TenantId));
                Assert.Equal("traced", a.GetTagItem(QueueTracing.Task));
                Assert.Equal(1, a.GetTagItem(QueueTracing.Attempt));
            });
            Assert.Equal(tenant, mine.Single(a => a.OperationName == QueueTracing.Submit).GetTagItem(QueueTracing.TenantId));
            Assert.Equal(2, mine.Single(a => a.OperationName == QueueTracing.Submit).GetTagItem(QueueTracing.Items));
            // Submit, then each item's claim, then its completion: the spans of the trace tell the job's story in order.
            var submitted = mine.Single(a => a.OperationName == QueueTracing.Submit);
            Assert.All(claims, c => Assert.True(c.StartTimeUtc >= submitted.StartTimeUtc));
            Assert.All(completions, c => Assert.True(c.StartTimeUtc + c.Duration >= claims.Max(x => x.StartTimeUtc + x.Duration)));
            Assert.Equal(5, mine.Count);
        }
    }

    [Fact]
    public async Task A_failed_attempt_is_a_fail_span_in_its_jobs_trace_saying_whether_the_item_is_dead()
    {
        var spans = new List<Activity>();
        using (Sdk.CreateTracerProviderBuilder().AddSource(QueueTracing.Name).AddInMemoryExporter(spans).Build())
        {
            var (_, jobId, claimed) = await LiveAJobAsync("failing", complete: false);
            using var worker = fx.Api.ClientWithKey(await fx.NewWorkerKeyAsync());
            // The claim's answer carried the tokens; LiveAJobAsync kept them for this test.
            foreach (var (id, token) in lastTokens)
            {
                using var r = await worker.PostAsJsonAsync($"/items/{id}/fail", new { leaseToken = token, error = "no such font", retry = false });
                Assert.Equal(HttpStatusCode.NoContent, r.StatusCode);
            }

            var fails = Of(spans, jobId).Where(a => a.OperationName == QueueTracing.Fail).ToList();
            Assert.Equal(claimed.Order(), fails.Select(a => (long)a.GetTagItem(QueueTracing.ItemId)!).Order());
            Assert.All(fails, a =>
            {
                Assert.Equal(QueueTracing.JobContext(jobId).TraceId, a.TraceId);
                Assert.Equal(true, a.GetTagItem("queue.dead"));
                Assert.Equal(ActivityStatusCode.Error, a.Status);
            });
        }
    }

    [Fact]
    public async Task With_no_listener_a_jobs_life_creates_no_activity_and_the_tracing_calls_allocate_nothing()
    {
        Assert.False(QueueTracing.Source.HasListeners());
        Assert.Null(QueueTracing.Begin());

        await LiveAJobAsync("untraced", complete: true);
        Assert.Null(Activity.Current);
        var items = new List<TakenItem> { new(1, HandMadeJobId, 3, 4, "t", 1, new byte[16], DateTime.UtcNow, false) };
        Assert.Equal(0, AllocatedByTracing(items));

        // The control: the same calls with a listener do make spans and allocate, so the zero above is the guard's.
        var spans = new List<Activity>();
        using (Sdk.CreateTracerProviderBuilder().AddSource(QueueTracing.Name).AddInMemoryExporter(spans).Build())
        {
            Assert.True(AllocatedByTracing(items) > 0);
            Assert.Equal(3, Of(spans, HandMadeJobId).Count);
        }
    }

    [Fact]
    public async Task The_counters_of_metrics_are_also_instruments_of_the_Queue_meter_with_the_same_names_and_values()
    {
        var exported = new List<Metric>();
        using var meters = Sdk.CreateMeterProviderBuilder().AddMeter(QueueTracing.Name).AddInMemoryExporter(exported).Build();
        await LiveAJobAsync("metered", complete: true);

        var claimsBefore = ApiMetrics.Claims.Value;
        var completionsBefore = ApiMetrics.Completions.Value;
        meters.ForceFlush();

        // Other tests of the process claim too: the exported value is the counter's at the collection, not below what was read before it.
        Assert.InRange(Sum(exported, "queue_claims_total"), claimsBefore, ApiMetrics.Claims.Value);
        Assert.InRange(Sum(exported, "queue_completions_total"), completionsBefore, ApiMetrics.Completions.Value);
        Assert.True(claimsBefore >= 2);
        Assert.Contains(exported, m => m.Name == "queue_leases_expired_total");
        Assert.Contains(exported, m => m.Name == "queue_fairness_jain");
    }

    [Fact]
    public async Task The_ordering_rewrite_is_a_span_of_its_own_saying_what_it_did()
    {
        var spans = new List<Activity>();
        using (Sdk.CreateTracerProviderBuilder().AddSource(QueueTracing.Name).AddInMemoryExporter(spans).Build())
        {
            var (_, jobId, _) = await LiveAJobAsync("rewritten", complete: false);
            var result = await fx.Api.Services.GetRequiredService<OrderingRewriter>().RewriteAsync("trace-test", force: true);

            // Other test classes of this process rewrite too, and the listener hears every one: this test's is named by its instance.
            var rewrite = Assert.Single(Rewrites(spans), a => (string?)a.GetTagItem(QueueTracing.Instance) == "trace-test");
            Assert.Equal(result.JobsRanked, rewrite.GetTagItem("queue.jobs_ranked"));
            Assert.True(result.JobsRanked >= 1);
            Assert.Equal(result.Period.ModeName, rewrite.GetTagItem("queue.mode"));
            Assert.NotEqual(QueueTracing.JobContext(jobId).TraceId, rewrite.TraceId);
        }
    }

    [Fact]
    public async Task OpenTelemetry_is_registered_only_when_an_OTLP_endpoint_is_configured()
    {
        await using var plain = new ApiFactory(fx.ConnectionString);
        Assert.Null(plain.Services.GetService<TracerProvider>());
        Assert.Null(plain.Services.GetService<MeterProvider>());

        await using var exporting = new ApiFactory(fx.ConnectionString,
            new Dictionary<string, string?> { [TelemetryHosting.EndpointVariable] = "http://127.0.0.1:9" });
        Assert.NotNull(exporting.Services.GetService<TracerProvider>());
        Assert.NotNull(exporting.Services.GetService<MeterProvider>());
        Assert.True(QueueTracing.Source.HasListeners());
    }

    private List<(long Id, string Token)> lastTokens = [];

    /// <summary>Submits a job of two documents for <paramref name="task"/>, claims both items in one /next, and completes them when asked.</summary>
    private async Task<(long Tenant, long JobId, List<long> Claimed)> LiveAJobAsync(string task, bool complete)
    {
        var (tenant, key) = await fx.NewCustomerAsync();
        using var customer = fx.Api.ClientWithKey(key);
        var job = await customer.CreateJobAsync(new
        {
            name = "life",
            tasks = new[] { task },
            documents = new[] { new { name = "a.txt", content = JobsTestKit.B64("a") }, new { name = "b.txt", content = JobsTestKit.B64("b") } },
        });
        var jobId = job.GetProperty("id").GetInt64();
        using var worker = fx.Api.ClientWithKey(await fx.NewWorkerKeyAsync());
        var items = new List<JsonElement>();
        for (var i = 0; i < 10 && items.Count < 2; i++)
        {
            items.AddRange(await WorkFixture.ClaimAsync(worker, new { tasks = new[] { task }, max = 2 - items.Count, worker = "w1" }));
        }
        Assert.Equal(2, items.Count);
        Assert.All(items, i => Assert.Equal(jobId, i.GetProperty("jobId").GetInt64()));
        lastTokens = items.Select(i => (i.GetProperty("id").GetInt64(), i.GetProperty("leaseToken").GetString()!)).ToList();
        if (complete)
        {
            foreach (var item in items)
            {
                using var r = await WorkFixture.FinishAsync(worker, item, "complete");
                Assert.Equal(HttpStatusCode.NoContent, r.StatusCode);
            }
        }
        return (tenant.Id, jobId, lastTokens.Select(t => t.Id).ToList());
    }

    private static List<Activity> Rewrites(List<Activity> spans)
    {
        lock (spans)
        {
            return spans.Where(a => a.OperationName == QueueTracing.Rewrite).ToList();
        }
    }

    private static List<Activity> Of(List<Activity> spans, long jobId)
    {
        lock (spans)
        {
            return spans.Where(a => (long?)a.GetTagItem(QueueTracing.JobId) == jobId).ToList();
        }
    }

    /// <summary>Bytes this thread allocates for a submit, a claim and a fail as the services trace them (a completion is guarded by its caller's Begin).</summary>
    private static long AllocatedByTracing(List<TakenItem> items)
    {
        var before = GC.GetAllocatedBytesForCurrentThread();
        var began = QueueTracing.Begin();
        QueueTracing.Submitted(began, HandMadeJobId, 3, 1, 1);
        QueueTracing.Claimed(began, items, "w");
        QueueTracing.Failed(began, 1, HandMadeJobId, 3, "t", 1, dead: false, "e");
        return GC.GetAllocatedBytesForCurrentThread() - before;
    }

    private static double Sum(List<Metric> exported, string name)
    {
        var metric = exported.Last(m => m.Name == name);
        var sum = 0.0;
        foreach (ref readonly var p in metric.GetMetricPoints())
        {
            sum += p.GetSumDouble();
        }
        return sum;
    }
}

/// <summary>An Api whose job ids start at <see cref="FirstJobId"/>, above any other test database's.</summary>
public sealed class TracedApiFixture : ApiFixture
{
    public const long FirstJobId = 7_000_000_001;

    public override async Task InitializeAsync()
    {
        await base.InitializeAsync();
        await using var conn = await DataSource.OpenConnectionAsync();
        await conn.ExecuteAsync($"ALTER TABLE jobs AUTO_INCREMENT = {FirstJobId}");
    }
}
