using System.Diagnostics;
using System.Net;
using System.Net.Http.Json;
using System.Text.Json;

namespace Queue.Tests.Work;

public sealed class LongPollTests(LongPollFixture fx) : IClassFixture<LongPollFixture>
{
    [Fact]
    public async Task A_waiting_worker_is_woken_within_100_ms_of_a_submission_in_this_process()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        using var http = fx.Worker();
        var poll = http.PostAsJsonAsync("/next", new { tasks = new[] { "poll-wake" }, wait = 20 });
        await Task.Delay(500);
        Assert.False(poll.IsCompleted);

        await fx.NewJobAsync(tenant.Id, 1, ["poll-wake"]);
        var submitted = Stopwatch.GetTimestamp();
        fx.Notify(); // what the submission code does after committing an upload
        using var r = await poll;
        var woke = Stopwatch.GetElapsedTime(submitted);

        Assert.Equal(HttpStatusCode.OK, r.StatusCode);
        Assert.Single((await r.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("items").EnumerateArray());
        // The shared poll is set to 60 s in this fixture, so only the in-process signal can explain a fast answer.
        Assert.True(woke < TimeSpan.FromMilliseconds(100), $"woke after {woke.TotalMilliseconds:F0} ms");
    }

    [Fact]
    public async Task A_waiting_worker_is_woken_within_100_ms_of_a_post_jobs_upload()
    {
        var (_, key) = await fx.NewCustomerAsync();
        using var http = fx.Worker();
        using var customer = fx.Api.CreateClient();
        customer.DefaultRequestHeaders.Authorization = new System.Net.Http.Headers.AuthenticationHeaderValue("Bearer", key);
        var poll = http.PostAsJsonAsync("/next", new { tasks = new[] { "poll-upload" }, wait = 20 });
        await Task.Delay(500);
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
        Assert.True(woke < TimeSpan.FromMilliseconds(100), $"woke {woke.TotalMilliseconds:F0} ms after the upload was acknowledged");
    }

    [Fact]
    public async Task A_long_poll_with_max_above_one_answers_as_soon_as_one_item_is_there()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        using var http = fx.Worker();
        var poll = http.PostAsJsonAsync("/next", new { tasks = new[] { "poll-batch" }, wait = 20, max = 10 });
        await Task.Delay(300);
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

/// <summary>The shared poll is made too slow to matter, so wake-ups in these tests come from the in-process signal.</summary>
public sealed class LongPollFixture : WorkFixture
{
    protected override IDictionary<string, string?> Settings => new Dictionary<string, string?> { ["Claims:PollMilliseconds"] = "60000" };
}

public sealed class SharedPollTests(SharedPollFixture fx) : IClassFixture<SharedPollFixture>
{
    [Fact]
    public async Task Work_made_elsewhere_wakes_waiting_workers_through_the_one_shared_poll()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        using var http = fx.Worker();
        var polls = Enumerable.Range(0, 4).Select(_ => http.PostAsJsonAsync("/next", new { tasks = new[] { "poll-other" }, wait = 20 })).ToList();
        await Task.Delay(400);
        // Another process's upload: rows and lanes only, no in-process signal.
        await fx.NewJobAsync(tenant.Id, 4, ["poll-other"]);
        var answers = await Task.WhenAll(polls).WaitAsync(TimeSpan.FromSeconds(10));
        Assert.All(answers, a => Assert.Equal(HttpStatusCode.OK, a.StatusCode));
    }
}

public sealed class SharedPollFixture : WorkFixture
{
    protected override IDictionary<string, string?> Settings => new Dictionary<string, string?> { ["Claims:PollMilliseconds"] = "100" };
}
