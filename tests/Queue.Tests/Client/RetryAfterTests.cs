using System.Diagnostics;
using Queue.Client;

namespace Queue.Tests.Client;

/// <summary>The client waits as long as a 503 or 429 says in Retry-After, then sends the same submit again.</summary>
public sealed class RetryAfterTests(ClientFixture fx) : IClassFixture<ClientFixture>
{
    [Theory]
    [InlineData(503)]
    [InlineData(429)]
    public async Task A_refused_submit_is_sent_again_after_the_Retry_After_delay_with_the_same_key_and_creates_one_job(int status)
    {
        var task = $"retry-after-{status}";
        var (_, key) = await fx.CustomerAsync(task);
        await using var proxy = new RetryAfterProxy(fx.BaseAddress, status, retryAfterSeconds: 1);
        proxy.Start();
        var retries = new List<QueueRetry>();
        // A backoff far below the server's Retry-After, so only honouring the header can make the client wait a second.
        using var client = fx.Client(key, proxy.BaseAddress, o =>
        {
            o.RetryBaseDelay = TimeSpan.FromMilliseconds(10);
            o.OnRetry = r => { lock (retries) { retries.Add(r); } };
        });

        var watch = Stopwatch.StartNew();
        var job = await client.CreateJobAsync(new NewJob("refused once", [task], Documents: [new InlineDocument("a.txt", "text/plain", "hello"u8.ToArray())]));
        watch.Stop();

        var retry = Assert.Single(retries);
        Assert.Equal(status, retry.Status);
        Assert.Equal(TimeSpan.FromSeconds(1), retry.Delay);
        var seen = proxy.Requests.ToArray();
        Assert.Equal(2, seen.Length);
        Assert.All(seen, r => Assert.Equal(("POST", "/jobs"), (r.Method, r.Path)));
        Assert.NotNull(seen[0].IdempotencyKey);
        Assert.Equal(seen[0].IdempotencyKey, seen[1].IdempotencyKey);
        Assert.True(Stopwatch.GetElapsedTime(seen[0].At, seen[1].At) >= TimeSpan.FromMilliseconds(950),
            $"sent again after {Stopwatch.GetElapsedTime(seen[0].At, seen[1].At)}");
        Assert.True(watch.Elapsed < TimeSpan.FromSeconds(10), $"took {watch.Elapsed}");

        using var direct = fx.Client(key);
        var only = Assert.Single((await direct.ListJobsAsync()).Jobs);
        Assert.Equal(job.Id, only.Id);
        Assert.Equal(1, only.Items.Total);
    }
}
