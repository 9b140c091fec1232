using System.Diagnostics;
using System.Net;
using Dapper;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Reliability;

/// <summary>the anonymous /metrics endpoint cannot make the database run its aggregate once per scrape.</summary>
public sealed class MetricsCostTests(ApiFixture fx) : IClassFixture<ApiFixture>
{
    [Fact]
    public async Task While_the_items_aggregate_cannot_run_scrapes_still_answer_within_about_a_second_and_do_not_each_rerun_it()
    {
        await fx.NewCustomerAsync();
        using var http = fx.Api.CreateClient();
        (await http.GetAsync(new Uri("/metrics", UriKind.Relative))).EnsureSuccessStatusCode();
        await Task.Delay(TimeSpan.FromSeconds(2.5)); // past the 2 s in which a refresh is fresh

        await using var locker = await fx.DataSource.OpenConnectionAsync();
        await locker.ExecuteAsync("LOCK TABLES jobs WRITE, tenants WRITE"); // the aggregate now waits until its 2 s timeout
        try
        {
            var watch = Stopwatch.StartNew();
            var concurrent = await Task.WhenAll(Enumerable.Range(0, 10).Select(_ => http.GetAsync(new Uri("/metrics", UriKind.Relative))));
            var concurrentTook = watch.Elapsed;
            watch.Restart();
            var sequential = new List<HttpResponseMessage>();
            for (var i = 0; i < 5; i++)
            {
                sequential.Add(await http.GetAsync(new Uri("/metrics", UriKind.Relative)));
            }
            var sequentialTook = watch.Elapsed;

            Assert.All(concurrent.Concat(sequential), r => Assert.Equal(HttpStatusCode.OK, r.StatusCode));
            // One refresh for all ten (each waits at most 1 s for it), not ten refreshes of 2 s one after another.
            Assert.True(concurrentTook < TimeSpan.FromSeconds(3), $"10 concurrent scrapes took {concurrentTook.TotalSeconds:F1} s");
            // After the failed refresh the next waits: these scrapes serve the last values without touching the database.
            Assert.True(sequentialTook < TimeSpan.FromSeconds(2), $"5 scrapes after a failed refresh took {sequentialTook.TotalSeconds:F1} s");
        }
        finally
        {
            await locker.ExecuteAsync("UNLOCK TABLES");
        }
    }
}
