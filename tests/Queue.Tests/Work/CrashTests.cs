using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Queue.Local;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Work;

/// <summary>
/// Runs alone: its scene needs the second answer's leases still unwritten when it reads them, and the Api writes them
/// down 700 ms after the handout; beside other tests on a loaded machine, the read came after the write.
/// </summary>
[Collection(RunsAlone.Name)]
public sealed class CrashTests(DirectClaimFixture fx) : IClassFixture<DirectClaimFixture>
{
    [Fact]
    public async Task A_killed_api_process_gives_back_within_seconds_what_it_claimed_ahead_or_served_from_memory_unwritten_and_keeps_the_written_leases()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        var job = await fx.NewJobAsync(tenant.Id, 40, ["crash"]);
        var api = ServiceProcess.Start("Queue.Api", fx.ConnectionString, new Dictionary<string, string>
        {
            ["Claims__Prefetch"] = "50",
            ["Claims__PrefetchAboveCallsPerSecond"] = "0",
            ["Claims__ReservationSeconds"] = "3",
            ["Claims__PrefetchHoldMilliseconds"] = "1400",
            ["Claims__HandoutFlushMilliseconds"] = "700",
        });
        var answers = new List<long[]>();
        await using (api)
        {
            await api.WaitHealthyAsync("/readyz");
            using var http = new HttpClient { BaseAddress = new Uri(api.Url) };
            http.DefaultRequestHeaders.Authorization = new System.Net.Http.Headers.AuthenticationHeaderValue("Bearer", fx.WorkerKey);
            // The first call is served by a transaction and claims ahead into memory (a quarter second of its demand);
            // the second is served from memory, its leases not written down yet when the process dies, and queues a
            // refill that claims ahead some more.
            foreach (var _ in Enumerable.Range(0, 2))
            {
                using var r = await http.PostAsJsonAsync("/next", new { tasks = new[] { "crash" }, max = 10, lease = 600 });
                Assert.Equal(HttpStatusCode.OK, r.StatusCode);
                answers.Add((await r.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("items").EnumerateArray().Select(i => i.GetProperty("id").GetInt64()).ToArray());
            }
            Assert.All(answers, a => Assert.Equal(10, a.Length));
            Assert.Equal(10L, await fx.ScalarAsync<long>("SELECT COUNT(*) FROM items WHERE id IN @Ids AND state = 1 AND lease_expires_at IS NULL", new { Ids = answers[1] }));
            api.Kill();
        }

        // Claimable again (active, due) within seconds, not after a worker lease; the leases written down stay.
        long back = 0;
        await Eventually.HoldsAsync(async () => (back = await fx.ScalarAsync<long>(
            "SELECT COUNT(*) FROM items WHERE job_id = @Job AND active = 1 AND due_at <= UTC_TIMESTAMP(6)", new { Job = job })) == 30, TimeSpan.FromSeconds(15));
        Assert.Equal(30L, back); // the 10 served from memory, and the 20 never handed out (claimed ahead or not)
        Assert.Equal(10L, await fx.ScalarAsync<long>("SELECT COUNT(*) FROM items WHERE id IN @Ids AND state = 1 AND lease_expires_at IS NOT NULL AND due_at > UTC_TIMESTAMP(6) + INTERVAL 500 SECOND",
            new { Ids = answers[0] }));
        Assert.Equal(0L, await fx.ScalarAsync<long>("SELECT COUNT(*) FROM item_errors e JOIN items i ON i.id = e.item_id WHERE i.job_id = @Job", new { Job = job }));
    }
}
