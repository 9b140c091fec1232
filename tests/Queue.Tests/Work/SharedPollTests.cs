using System.Diagnostics;
using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Queue.Core;

namespace Queue.Tests.Work;

public sealed class SharedPollTests(SharedPollFixture fx) : IClassFixture<SharedPollFixture>
{
    [Fact]
    public async Task Work_made_elsewhere_wakes_waiting_workers_through_the_one_shared_poll()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        using var http = fx.Worker();
        var polls = Enumerable.Range(0, 4).Select(_ => http.PostAsJsonAsync("/next", new { tasks = new[] { "poll-other" }, wait = 20 })).ToList();
        await Eventually.UntilAsync(() => fx.Service<WorkSignal>().Waiters >= 4, "the four /next calls wait");
        // Another process's upload: rows and lanes only, no in-process signal.
        await fx.NewJobAsync(tenant.Id, 4, ["poll-other"]);
        var answers = await Task.WhenAll(polls).WaitAsync(TimeSpan.FromSeconds(10));
        Assert.All(answers, a => Assert.Equal(HttpStatusCode.OK, a.StatusCode));
    }
}
