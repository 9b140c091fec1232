using System.Diagnostics;
using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Queue.Core;

namespace Queue.Tests.Work;

public sealed class LongPollTests(LongPollFixture fx) : IClassFixture<LongPollFixture>
{
    /// <summary>Far below the 60 s shared poll and the 20 s wait of these tests: an answer this fast came from the signal.</summary>
    private static readonly TimeSpan SignalBound = TimeSpan.FromSeconds(5);

    [Fact]
    public async Task A_waiting_worker_is_woken_by_the_in_process_signal_of_a_submission_not_by_a_poll_or_its_timeout()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        using var http = fx.Worker();
        var poll = http.PostAsJsonAsync("/next", new { tasks = new[] { "poll-wake" }, wait = 20 });
        await Eventually.UntilAsync(() => fx.Service<WorkSignal>().Waiters >= 1, "the /next call waits");
        Assert.False(poll.IsCompleted);

        await fx.NewJobAsync(tenant.Id, 1, ["poll-wake"]);
        var submitted = Stopwatch.GetTimestamp();
        fx.Notify(); // what the submission code does after committing an upload
        using var r = await poll;
        var woke = Stopwatch.GetElapsedTime(submitted);

        Assert.Equal(HttpStatusCode.OK, r.StatusCode);
        Assert.Single((await r.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("items").EnumerateArray());
        // The shared poll is set to 60 s in this fixture and the wait to 20 s, so only the in-process signal explains an
        // answer within seconds; the bound is loose on purpose (a loaded CI box stalls for whole seconds), the property is not.
        Assert.True(woke < SignalBound, $"woke after {woke.TotalMilliseconds:F0} ms");
    }

    [Fact]
    public async Task A_waiting_worker_is_woken_by_a_post_jobs_submission_at_once_not_by_a_poll_or_its_timeout()
    {
        var (_, key) = await fx.NewCustomerAsync();
        using var http = fx.Worker();
        using var customer = fx.Api.CreateClient();
        customer.DefaultRequestHeaders.Authorization = new System.Net.Http.Headers.AuthenticationHeaderValue("Bearer", key);
        var poll = http.PostAsJsonAsync("/next", new { tasks = new[] { "poll-upload" }, wait = 20 });
        await Eventually.UntilAsync(() => fx.Service<WorkSignal>().Waiters >= 1, "the /next call waits");
        Assert.False(poll.IsCompleted);

        using var created = await customer.PostAsJsonAsync("/jobs", new
        {
            name = "wake",
            tasks = new[] { "poll-upload" },
            documents = new[] { new { name = "a.txt", contentType = "text/plain", content = Convert.ToBase64String("hi"u8) } },
        });
        Assert.Equal(HttpStatusCode.Created, created.StatusCode);
        var answered = Stopwatch.GetTimestamp();
        using var r = await poll;
        var woke = Stopwatch.GetElapsedTime(answered);
        Assert.Equal(HttpStatusCode.OK, r.StatusCode);
        Assert.True(woke < SignalBound, $"woke {woke.TotalMilliseconds:F0} ms after the upload was acknowledged");
    }

    [Fact]
    public async Task A_long_poll_with_max_above_one_answers_as_soon_as_one_item_is_there()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        using var http = fx.Worker();
        var poll = http.PostAsJsonAsync("/next", new { tasks = new[] { "poll-batch" }, wait = 20, max = 10 });
        await Eventually.UntilAsync(() => fx.Service<WorkSignal>().Waiters >= 1, "the /next call waits");
        await fx.NewJobAsync(tenant.Id, 2, ["poll-batch"]);
        fx.Notify();
        using var r = await poll.WaitAsync(TimeSpan.FromSeconds(5));
        Assert.Equal(HttpStatusCode.OK, r.StatusCode);
        Assert.Equal(2, (await r.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("items").GetArrayLength());
    }

    [Fact]
    public async Task A_long_poll_with_nothing_to_claim_answers_204_after_the_wait()
    {
        using var http = fx.Worker();
        var started = Stopwatch.GetTimestamp();
        using var r = await http.PostAsJsonAsync("/next", new { tasks = new[] { "poll-none" }, wait = 1 });
        Assert.Equal(HttpStatusCode.NoContent, r.StatusCode);
        Assert.True(Stopwatch.GetElapsedTime(started) >= TimeSpan.FromSeconds(0.95));
    }
}
