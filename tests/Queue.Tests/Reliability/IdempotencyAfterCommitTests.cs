using System.Net;
using Dapper;
using Queue.Tests.Infrastructure;
using Queue.Tests.Jobs;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Reliability;

/// <summary>once a job committed, its Idempotency-Key replays it, whatever fails after the commit.</summary>
public sealed class IdempotencyAfterCommitTests(ApiFixture fx) : IClassFixture<ApiFixture>
{
    private static HttpRequestMessage Post(string path, HttpContent content, string key)
    {
        var m = new HttpRequestMessage(HttpMethod.Post, U(path)) { Content = content };
        m.Headers.TryAddWithoutValidation("Idempotency-Key", key);
        return m;
    }

    private Task<bool> StatusReadIsBlockedAsync() => Task.Run(async () => await fx.CountAsync(
        "SELECT COUNT(*) FROM information_schema.processlist WHERE db = @Db AND state = 'Waiting for table metadata lock'",
        new { Db = fx.DatabaseName }) > 0);

    [Fact]
    public async Task A_client_that_aborts_after_the_job_committed_gets_the_same_job_replayed_on_retry()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        const string body = """{"name":"abort-after-commit","documents":[{"name":"a.txt","content":"eA=="}]}""";
        // The first status of a live job after the commit samples the completion rate for its ETA (this fixture's
        // Api has no sample yet), which reads tenant_counters: a table the creating transaction never touches, so a
        // held lock on it parks the request right after the commit.
        await using var locker = await fx.DataSource.OpenConnectionAsync();
        await locker.ExecuteAsync("LOCK TABLES tenant_counters WRITE");
        using var abort = new CancellationTokenSource();
        var first = http.SendAsync(Post("/jobs", Json(body), "abort-1"), abort.Token);
        await Eventually.UntilAsync(async () => await fx.CountAsync("SELECT COUNT(*) FROM jobs WHERE name = 'abort-after-commit'") == 1, "the job row exists");
        await Eventually.UntilAsync(StatusReadIsBlockedAsync, "the status read waits after the commit");
        await abort.CancelAsync();
        // Before the fix the aborted read is killed at once and the key freed; give that every chance to happen.
        await Eventually.HoldsAsync(async () => !await StatusReadIsBlockedAsync(), TimeSpan.FromSeconds(3));
        await locker.ExecuteAsync("UNLOCK TABLES");
        // Awaited only now: the in-process test client ends an aborted call when the server's handler ends, so awaited
        // before the unlock it waited out the read's 30 s command timeout (and the request ended by that timeout, not
        // by the read the abort must leave running).
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => first);

        HttpResponseMessage retry = null!;
        await Eventually.UntilAsync(async () =>
        {
            retry = await http.SendAsync(Post("/jobs", Json(body), "abort-1"));
            return retry.StatusCode != HttpStatusCode.Conflict; // still finishing the first request: retry, as a client would
        }, "the first request has finished");
        Assert.Equal(HttpStatusCode.Created, retry.StatusCode);
        Assert.True(retry.Headers.TryGetValues("Idempotent-Replayed", out var replayed) && replayed.Single() == "true", "the retry is a replay");
        Assert.Equal(1, await fx.CountAsync("SELECT COUNT(*) FROM jobs WHERE name = 'abort-after-commit'"));
        var id = await fx.CountAsync("SELECT id FROM jobs WHERE name = 'abort-after-commit'");
        Assert.Equal($"/jobs/{id}", retry.Headers.Location?.ToString());
    }
}
