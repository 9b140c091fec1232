using System.Net;
using System.Net.Http.Headers;
using Dapper;
using Queue.Tests.Infrastructure;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Reliability;

/// <summary>The Api with a short database wait, so that a held table lock outlasts it (the reproduction).</summary>
public sealed class ShortWaitFixture : ApiFixture
{
    protected override IDictionary<string, string?> Settings => new Dictionary<string, string?>
    {
        ["Jobs:DatabaseWaitMilliseconds"] = "300",
    };
}

/// <summary>
/// A keyed write answered 503 because its wait ran out, while its transaction was already under way: the write
/// commits later, and the retry the contract prescribes must find it, not make a second one.
/// </summary>
public sealed class WriteStillRunningTests(ShortWaitFixture fx) : IClassFixture<ShortWaitFixture>
{
    private static HttpRequestMessage Keyed(string path, HttpContent content, string key)
    {
        var m = new HttpRequestMessage(HttpMethod.Post, U(path)) { Content = content };
        m.Headers.TryAddWithoutValidation("Idempotency-Key", key);
        return m;
    }

    private static ByteArrayContent Raw(string text)
    {
        var c = new ByteArrayContent(System.Text.Encoding.UTF8.GetBytes(text));
        c.Headers.ContentType = MediaTypeHeaderValue.Parse("text/plain");
        return c;
    }

    /// <summary>Sends until the first request has finished (409 meanwhile, as a client retries), then returns the answer.</summary>
    private static async Task<HttpResponseMessage> RetryUntilSettledAsync(HttpClient http, Func<HttpRequestMessage> request)
    {
        HttpResponseMessage retry = null!;
        await Eventually.UntilAsync(async () =>
        {
            retry = await http.SendAsync(request());
            return retry.StatusCode is not (HttpStatusCode.Conflict or HttpStatusCode.ServiceUnavailable);
        }, "the first request's write has settled", 30);
        return retry;
    }

    /// <summary>
    /// Holds <paramref name="table"/> write-locked while <paramref name="send"/> runs and until its write waits for the
    /// lock (so it is under way when the lock goes); returns its answer.
    /// </summary>
    private async Task<HttpResponseMessage> DuringLockAsync(string table, Func<Task<HttpResponseMessage>> send)
    {
        await using var locker = await fx.DataSource.OpenConnectionAsync();
        await locker.ExecuteAsync($"LOCK TABLES {table} WRITE");
        HttpResponseMessage first;
        try
        {
            first = await send();
            await using var watcher = await fx.DataSource.OpenConnectionAsync();
            await Eventually.UntilAsync(async () => await watcher.ExecuteScalarAsync<long>(
                "SELECT COUNT(*) FROM information_schema.processlist WHERE db = DATABASE() AND state LIKE 'Waiting for table%'") > 0,
                $"a write waits for the lock on {table}", 30);
        }
        finally
        {
            await locker.ExecuteAsync("UNLOCK TABLES");
        }
        return first;
    }

    [Fact]
    public async Task A_keyed_job_answered_503_while_its_write_waited_on_a_lock_is_created_once_and_the_retry_replays_its_status()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        const string body = """{"name":"through-a-lock","tasks":["text"],"documents":[{"name":"a","content":"aGVsbG8="}]}""";

        var first = await DuringLockAsync("jobs", () => http.SendAsync(Keyed("/jobs", Json(body), "lock-1")));
        Assert.Equal(HttpStatusCode.ServiceUnavailable, first.StatusCode);
        var retry = await RetryUntilSettledAsync(http, () => Keyed("/jobs", Json(body), "lock-1"));

        Assert.Equal(HttpStatusCode.Created, retry.StatusCode);
        Assert.True(retry.Headers.TryGetValues("Idempotent-Replayed", out var replayed) && replayed.Single() == "true", "the retry is a replay");
        Assert.Equal(1, await fx.CountAsync("SELECT COUNT(*) FROM jobs WHERE name = 'through-a-lock'"));
        var id = await fx.CountAsync("SELECT id FROM jobs WHERE name = 'through-a-lock'");
        Assert.Equal($"/jobs/{id}", retry.Headers.Location?.ToString());
        // The replay is the job status the contract promises for POST /jobs, not a bare id.
        var status = await retry.BodyAsync();
        Assert.Equal(id, status.GetProperty("id").GetInt64());
        Assert.Equal("closed", status.GetProperty("state").GetString());
        Assert.Equal(1, status.GetProperty("items").GetProperty("total").GetInt64());
        Assert.Equal(1, status.GetProperty("created").GetArrayLength());
    }

    [Fact]
    public async Task A_keyed_small_upload_answered_503_while_its_write_waited_on_a_lock_lands_once_and_the_retry_replays_it()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        var job = await http.OpenJobAsync(["text"]);
        var path = $"/jobs/{job}/documents?name=a.txt";

        var first = await DuringLockAsync("documents", () => http.SendAsync(Keyed(path, Raw("hello"), "upload-lock-1")));
        Assert.Equal(HttpStatusCode.ServiceUnavailable, first.StatusCode);
        var retry = await RetryUntilSettledAsync(http, () => Keyed(path, Raw("hello"), "upload-lock-1"));

        Assert.Equal(HttpStatusCode.Created, retry.StatusCode);
        Assert.True(retry.Headers.TryGetValues("Idempotent-Replayed", out var replayed) && replayed.Single() == "true", "the retry is a replay");
        Assert.Equal(1, await fx.CountAsync("SELECT COUNT(*) FROM documents WHERE job_id = @Job", new { Job = job }));
        Assert.Equal(1, (await retry.BodyAsync()).GetProperty("itemsAdded").GetInt64());
    }

    [Fact]
    public async Task A_keyed_small_upload_whose_client_left_while_its_write_waited_on_a_lock_keeps_its_key_and_lands_once()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        var job = await http.OpenJobAsync(["text"]);
        var path = $"/jobs/{job}/documents?name=b.txt";

        await DuringLockAsync("documents", async () =>
        {
            using var leave = new CancellationTokenSource(TimeSpan.FromMilliseconds(150));
            await Assert.ThrowsAnyAsync<OperationCanceledException>(() => http.SendAsync(Keyed(path, Raw("bye"), "upload-left-1"), leave.Token));
            return null!;
        });
        var retry = await RetryUntilSettledAsync(http, () => Keyed(path, Raw("bye"), "upload-left-1"));

        Assert.Equal(HttpStatusCode.Created, retry.StatusCode);
        Assert.Equal(1, await fx.CountAsync("SELECT COUNT(*) FROM documents WHERE job_id = @Job", new { Job = job }));
    }
}
