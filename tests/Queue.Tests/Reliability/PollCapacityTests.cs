using System.Net;
using System.Net.Http.Json;
using Queue.Tests.Work;

namespace Queue.Tests.Reliability;

public sealed class PollCapacityTests(PollCapacityFixture fx) : IClassFixture<PollCapacityFixture>
{
    [Fact]
    public async Task A_complete_gets_its_204_while_every_long_poll_permit_is_held_by_waiting_workers()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        await fx.NewJobAsync(tenant.Id, 1, ["capacity-work"]);
        using var http = fx.Worker();
        var item = await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "capacity-work" } });

        using var stop = new CancellationTokenSource();
        var pollers = new List<Task<HttpResponseMessage>>();
        try
        {
            await Eventually.UntilAsync(async () =>
            {
                // A poll turned away while a probe held a permit is sent again.
                pollers.RemoveAll(p => p.IsCompleted);
                while (pollers.Count < PollCapacityFixture.Limit)
                {
                    pollers.Add(http.PostAsJsonAsync("/next", new { tasks = new[] { "capacity-idle" }, wait = 30 }, stop.Token));
                }
                // Every permit is held by a waiting poll once one more poll is turned away.
                using var probe = await http.PostAsJsonAsync("/next", new { tasks = new[] { "capacity-idle" }, wait = 0 });
                return probe.StatusCode == HttpStatusCode.ServiceUnavailable && pollers.All(p => !p.IsCompleted);
            }, "the waiting polls hold every poll permit");

            using var extended = await http.PostAsJsonAsync($"/items/{item.GetProperty("id").GetInt64()}/extend",
                new { leaseToken = item.GetProperty("leaseToken").GetString(), lease = 60 });
            Assert.Equal(HttpStatusCode.OK, extended.StatusCode);
            using var completed = await WorkFixture.FinishAsync(http, item, "complete");
            Assert.Equal(HttpStatusCode.NoContent, completed.StatusCode);
        }
        finally
        {
            await stop.CancelAsync();
            foreach (var p in pollers)
            {
                try
                {
                    (await p).Dispose();
                }
                catch (OperationCanceledException)
                {
                }
            }
        }
    }
}
