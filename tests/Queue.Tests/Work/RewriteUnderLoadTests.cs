using System.Collections.Concurrent;
using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Queue.Core.Ordering;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Work;

/// <summary>Required reliability test 16: throughout rewrites of the ordering under claim load, no item is dropped or handed out twice.</summary>
[TakesAbout(11)]
public sealed class RewriteUnderLoadTests(DirectClaimFixture fx) : IClassFixture<DirectClaimFixture>
{
    [Fact]
    public async Task Rewrites_running_while_sixteen_workers_drain_1000_items_drop_none_and_duplicate_none()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        var jobs = new List<long>();
        for (var j = 0; j < 50; j++)
        {
            jobs.Add(await fx.NewJobAsync(tenant.Id, 20, ["rewrite-load"]));
        }
        var rewriter = fx.Service<OrderingRewriter>();
        using var stop = new CancellationTokenSource();
        var rewrites = Task.Run(async () =>
        {
            var n = 0;
            for (; !stop.IsCancellationRequested; n++)
            {
                // Each as for the next period (the other mode), so every value moves; the clock stays, leases stay live.
                await rewriter.RewriteAsync("under-load", fx.Clock.GetUtcNow() + TimeSpan.FromHours(n + 1), force: true);
            }
            return n;
        });
        var claimed = new ConcurrentBag<long>();
        var errors = new ConcurrentBag<string>();
        var workers = Enumerable.Range(0, 16).Select(async w =>
        {
            using var http = fx.Worker();
            for (var empty = 0; empty < 3;)
            {
                var items = await WorkFixture.ClaimAsync(http, new { worker = $"r{w}", tasks = new[] { "rewrite-load" }, max = 1 + (w % 3), lease = 3600 });
                empty = items.Length == 0 ? empty + 1 : 0;
                foreach (var item in items)
                {
                    claimed.Add(item.GetProperty("id").GetInt64());
                    using var done = await WorkFixture.FinishAsync(http, item, "complete");
                    if (done.StatusCode != HttpStatusCode.NoContent)
                    {
                        errors.Add($"complete {(int)done.StatusCode}");
                    }
                }
            }
        }).ToList();
        await Task.WhenAll(workers);
        await stop.CancelAsync();
        var rewritten = await rewrites;

        Assert.Empty(errors);
        Assert.True(rewritten >= 2, $"only {rewritten} rewrites ran during the drain");
        Assert.Equal(1000, claimed.Count);
        Assert.Equal(1000, claimed.Distinct().Count());
        Assert.Equal(1000L, await fx.ScalarAsync<long>("SELECT COUNT(*) FROM items WHERE job_id IN @jobs AND state = 2 AND attempts = 1", new { jobs }));
    }

    [Fact]
    public async Task After_rewrites_the_status_and_explain_show_a_jobs_value_without_its_band()
    {
        var (tenant, key) = await fx.NewCustomerAsync();
        var plain = await fx.NewJobAsync(tenant.Id, 3, ["rewrite-shown"]);
        var bumped = await fx.NewJobAsync(tenant.Id, 3, ["rewrite-shown"]);
        await Fairness.TenantFairFixture.OverrideAsync(fx, bumped, -7);
        var rewriter = fx.InPlaceRewriter();
        for (var n = 1; n <= 2; n++)
        {
            await rewriter.RewriteAsync("shown", fx.Clock.GetUtcNow() + TimeSpan.FromHours(n), force: true);
        }
        Assert.True(await fx.ScalarAsync<long>("SELECT MIN(value) FROM ordering WHERE job_id = @Id", new { Id = bumped }) > 1L << 42);

        using var http = fx.Api.CreateClient();
        http.DefaultRequestHeaders.Authorization = new System.Net.Http.Headers.AuthenticationHeaderValue("Bearer", key);
        var status = await http.GetFromJsonAsync<JsonElement>(new Uri($"/jobs/{bumped}", UriKind.Relative));
        Assert.Equal(-7, status.GetProperty("ordering").GetProperty("value").GetInt64());
        var (_, explained) = await Fairness.ExplainKit.ExplainAsync(fx, key, bumped);
        Assert.Equal(-7, explained.GetProperty("value").GetInt64());
        // Two rewrites from now: the second one's mode is the current one (smallest-first or oldest-first, by the hour).
        var shown = (await http.GetFromJsonAsync<JsonElement>(new Uri($"/jobs/{plain}", UriKind.Relative))).GetProperty("ordering").GetProperty("value").GetInt64();
        Assert.True(shown is 3 or (>= 10000 and < 1_000_000_000), $"value shown: {shown}");
    }
}
