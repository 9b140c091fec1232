using System.Diagnostics;
using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Queue.Core;

namespace Queue.Tests.Work;

/// <summary>CONTRACT v1.3: <c>next.wait</c> of a complete long-polls as /next does (the shared poll is 60 s here).</summary>
public sealed class NextExchangeLongPollTests(LongPollFixture fx) : IClassFixture<LongPollFixture>
{
    [Fact]
    public async Task A_completion_with_next_and_wait_is_recorded_at_once_and_answers_when_new_work_is_submitted()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        await fx.NewJobAsync(tenant.Id, 1, ["ex-wait"]);
        using var http = fx.Worker();
        var item = await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "ex-wait" } });
        var waiters = fx.Service<WorkSignal>().Waiters;

        var exchange = WorkFixture.FinishAsync(http, item, "complete", new
        {
            leaseToken = item.GetProperty("leaseToken").GetString(),
            next = new { tasks = new[] { "ex-wait" }, wait = 20 },
        });
        await Eventually.UntilAsync(() => fx.Service<WorkSignal>().Waiters > waiters, "the exchange waits");
        Assert.False(exchange.IsCompleted);
        // The completion did not wait for the next item.
        Assert.Equal(2, (await fx.ItemAsync(item.GetProperty("id").GetInt64())).State);

        var job = await fx.NewJobAsync(tenant.Id, 1, ["ex-wait"]);
        var submitted = Stopwatch.GetTimestamp();
        fx.Notify();
        using var r = await exchange.WaitAsync(TimeSpan.FromSeconds(15));
        var woke = Stopwatch.GetElapsedTime(submitted);

        Assert.Equal(HttpStatusCode.OK, r.StatusCode);
        var next = Assert.Single((await r.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("items").EnumerateArray());
        Assert.Equal(job, next.GetProperty("jobId").GetInt64());
        Assert.True(woke < TimeSpan.FromSeconds(5), $"woke after {woke.TotalMilliseconds:F0} ms");
    }

    [Fact]
    public async Task A_completion_with_next_and_wait_and_nothing_coming_answers_200_with_no_items_after_the_wait()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        await fx.NewJobAsync(tenant.Id, 1, ["ex-wait-none"]);
        using var http = fx.Worker();
        var item = await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "ex-wait-none" } });

        var started = Stopwatch.GetTimestamp();
        using var r = await WorkFixture.FinishAsync(http, item, "complete", new
        {
            leaseToken = item.GetProperty("leaseToken").GetString(),
            next = new { tasks = new[] { "ex-wait-none" }, wait = 1 },
        });

        Assert.Equal(HttpStatusCode.OK, r.StatusCode);
        Assert.True(Stopwatch.GetElapsedTime(started) >= TimeSpan.FromSeconds(0.95));
        Assert.Equal(0, (await r.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("items").GetArrayLength());
        Assert.False(r.Headers.Contains("Retry-After"));
    }
}
