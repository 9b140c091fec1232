using System.Net;
using System.Net.Http.Json;
using System.Text;
using Queue.Tests.Infrastructure;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Jobs;

public sealed class IdempotencyTests(ApiFixture fx) : IClassFixture<ApiFixture>
{
    private static HttpRequestMessage Post(string path, string json, string key)
    {
        var m = new HttpRequestMessage(HttpMethod.Post, U(path)) { Content = Json(json) };
        m.Headers.TryAddWithoutValidation("Idempotency-Key", key);
        return m;
    }

    [Fact]
    public async Task A_retry_with_the_same_key_and_body_replays_the_first_answer_and_creates_no_second_job()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        const string body = """{"name":"nightly","documents":[{"name":"a","content":"aGVsbG8="}]}""";
        var first = await http.SendAsync(Post("/jobs", body, "run-2026-11-22"));
        Assert.Equal(HttpStatusCode.Created, first.StatusCode);
        var second = await http.SendAsync(Post("/jobs", body, "run-2026-11-22"));
        Assert.Equal(HttpStatusCode.Created, second.StatusCode);
        Assert.Equal(first.Headers.Location, second.Headers.Location);
        Assert.Equal(await first.Content.ReadAsStringAsync(), await second.Content.ReadAsStringAsync());
        Assert.Equal("application/json", second.Content.Headers.ContentType?.MediaType);
        Assert.Equal(1, await fx.CountAsync("SELECT COUNT(*) FROM jobs WHERE name = 'nightly'"));
    }

    [Theory]
    [InlineData(0)] // a retry right after the process died
    [InlineData(11)] // a retry past the 10-minute takeover of a key left running
    public async Task A_key_whose_request_died_after_its_job_committed_is_answered_with_that_job_and_never_makes_a_second(int minutesLater)
    {
        var (tenant, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        var idem = $"died-{minutesLater}";
        const string body = """{"name":"died","documents":[{"name":"a.txt","content":"aGVsbG8="},{"name":"b.txt","content":"d29ybGQ="}]}""";
        var first = await http.SendAsync(Post("/jobs", body, idem));
        Assert.Equal(HttpStatusCode.Created, first.StatusCode);
        await DiedAfterCommitAsync(tenant.Id, idem, minutesLater);

        var retry = await http.SendAsync(Post("/jobs", body, idem));
        var again = await http.SendAsync(Post("/jobs", body, idem));

        Assert.Equal(HttpStatusCode.Created, retry.StatusCode);
        Assert.Equal(first.Headers.Location, retry.Headers.Location);
        var answer = await retry.BodyAsync();
        Assert.Equal("died", answer.GetProperty("name").GetString());
        Assert.Equal(["a.txt", "b.txt"], answer.GetProperty("created").EnumerateArray().Select(d => d.GetProperty("name").GetString()));
        Assert.Equal(HttpStatusCode.Created, again.StatusCode);
        Assert.Equal(first.Headers.Location, again.Headers.Location);
        Assert.Equal(1, await fx.CountAsync("SELECT COUNT(*) FROM jobs WHERE tenant_id = @Id", new { tenant.Id }));
    }

    [Fact]
    public async Task A_failure_after_the_job_committed_never_frees_its_key_so_the_retry_gets_that_job()
    {
        var (tenant, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        const string body = """{"name":"freed","documents":[{"name":"a.txt","content":"aGVsbG8="}]}""";
        var first = await http.SendAsync(Post("/jobs", body, "freed-1"));
        Assert.Equal(HttpStatusCode.Created, first.StatusCode);
        // The request failing after its commit (a reset connection while it read its position), as the filter then
        // frees the key of a failed request: the record must stay, since the job exists.
        var store = new Queue.Core.Jobs.IdempotencyStore(fx.DataSource, TimeProvider.System);
        DateTime started;
        await using (var conn = await fx.DataSource.OpenConnectionAsync())
        {
            await Dapper.SqlMapper.ExecuteAsync(conn, "UPDATE idempotency SET state = 0 WHERE tenant_id = @Tenant AND idem_key = 'freed-1'", new { Tenant = tenant.Id });
            started = await Dapper.SqlMapper.ExecuteScalarAsync<DateTime>(conn, "SELECT created_at FROM idempotency WHERE tenant_id = @Tenant AND idem_key = 'freed-1'",
                new { Tenant = tenant.Id });
        }
        await store.ReleaseAsync(tenant.Id, "freed-1", started, default);

        var retry = await http.SendAsync(Post("/jobs", body, "freed-1"));

        Assert.Equal(HttpStatusCode.Created, retry.StatusCode);
        Assert.Equal(first.Headers.Location, retry.Headers.Location);
        Assert.Equal(1, await fx.CountAsync("SELECT COUNT(*) FROM jobs WHERE tenant_id = @Id", new { tenant.Id }));
    }

    [Theory]
    [InlineData(0, 5)] // grouped with the other small uploads of the moment
    [InlineData(11, 300 * 1024)] // past the grouped size: spooled, a transaction of its own; retried past the takeover
    public async Task A_keyed_upload_whose_request_died_after_it_committed_is_answered_with_its_documents_and_never_stored_twice(int minutesLater, int size)
    {
        var (tenant, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        var job = await http.OpenJobAsync(["text", "ocr"]);
        var idem = $"upload-died-{minutesLater}";
        var bytes = new byte[size];
        HttpRequestMessage Upload()
        {
            var content = new ByteArrayContent(bytes);
            content.Headers.ContentType = new("application/octet-stream");
            var m = new HttpRequestMessage(HttpMethod.Post, U($"/jobs/{job}/documents?name=scan.bin")) { Content = content };
            m.Headers.TryAddWithoutValidation("Idempotency-Key", idem);
            return m;
        }
        var first = await http.SendAsync(Upload());
        Assert.Equal(HttpStatusCode.Created, first.StatusCode);
        await DiedAfterCommitAsync(tenant.Id, idem, minutesLater);

        var retry = await http.SendAsync(Upload());

        Assert.Equal(HttpStatusCode.Created, retry.StatusCode);
        Assert.Equal(first.Headers.Location, retry.Headers.Location);
        var answer = await retry.BodyAsync();
        Assert.Equal(2, answer.GetProperty("itemsAdded").GetInt64());
        Assert.Equal("scan.bin", Assert.Single(answer.GetProperty("documents").EnumerateArray()).GetProperty("name").GetString());
        Assert.Equal(1, await fx.CountAsync("SELECT COUNT(*) FROM documents WHERE job_id = @job", new { job }));
        Assert.Equal(2, await fx.CountAsync("SELECT COUNT(*) FROM items WHERE job_id = @job", new { job }));
    }

    [Fact]
    public async Task Ten_sends_of_one_key_three_of_them_at_once_make_one_job_and_another_tenant_may_use_the_same_key()
    {
        var (tenant, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        const string body = """{"name":"retried","tasks":["text"],"documents":[{"name":"a","content":"aGVsbG8="}]}""";

        var concurrent = await Task.WhenAll(Enumerable.Range(0, 3).Select(_ => http.SendAsync(Post("/jobs", body, "retry-storm"))));
        var sequential = new List<HttpResponseMessage>();
        for (var i = 0; i < 7; i++)
        {
            sequential.Add(await http.SendAsync(Post("/jobs", body, "retry-storm")));
        }

        // A send that overlaps the first one may be told to retry (409); none creates a second job.
        Assert.All(concurrent, r => Assert.Contains(r.StatusCode, new[] { HttpStatusCode.Created, HttpStatusCode.Conflict }));
        Assert.Contains(concurrent, r => r.StatusCode == HttpStatusCode.Created);
        Assert.All(sequential, r => Assert.Equal(HttpStatusCode.Created, r.StatusCode));
        Assert.Single(concurrent.Concat(sequential).Where(r => r.StatusCode == HttpStatusCode.Created).Select(r => r.Headers.Location).Distinct());
        Assert.Equal(1, await fx.CountAsync("SELECT COUNT(*) FROM jobs WHERE tenant_id = @Id", new { tenant.Id }));
        // A different body under the key is refused; the same key in another tenant is its own.
        Assert.Equal((HttpStatusCode)422, (await http.SendAsync(Post("/jobs", body.Replace("retried", "other", StringComparison.Ordinal), "retry-storm"))).StatusCode);
        var (other, otherKey) = await fx.NewCustomerAsync();
        Assert.Equal(HttpStatusCode.Created, (await fx.Api.ClientWithKey(otherKey).SendAsync(Post("/jobs", body, "retry-storm"))).StatusCode);
        Assert.Equal(1, await fx.CountAsync("SELECT COUNT(*) FROM jobs WHERE tenant_id = @Id", new { other.Id }));
    }

    [Fact]
    public async Task The_replay_is_the_stored_answer_even_after_the_job_changed()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        const string body = """{"name":"changes","open":true}""";
        var first = await http.SendAsync(Post("/jobs", body, "k-changes"));
        await http.PostAsync(first.Headers.Location!.ToString() + "/close", null);
        var replay = await http.SendAsync(Post("/jobs", body, "k-changes"));
        Assert.Equal(HttpStatusCode.Created, replay.StatusCode);
        Assert.Equal("open", (await replay.BodyAsync()).GetProperty("state").GetString());
    }

    [Fact]
    public async Task The_same_key_with_a_different_body_or_path_gets_422()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        Assert.Equal(HttpStatusCode.Created, (await http.SendAsync(Post("/jobs", """{"name":"one","open":true}""", "k1"))).StatusCode);
        await AssertProblemAsync(await http.SendAsync(Post("/jobs", """{"name":"two","open":true}""", "k1")), HttpStatusCode.UnprocessableEntity);
        var job = await http.OpenJobAsync();
        await AssertProblemAsync(await http.SendAsync(Post($"/jobs/{job}/documents?name=x", """{"name":"one","open":true}""", "k1")), HttpStatusCode.UnprocessableEntity);
        Assert.Equal(0, await fx.CountAsync("SELECT COUNT(*) FROM jobs WHERE name = 'two'"));
        Assert.Equal(0, await fx.CountAsync("SELECT COUNT(*) FROM documents WHERE job_id = @job", new { job }));
    }

    [Fact]
    public async Task An_error_is_not_stored_so_a_corrected_retry_may_reuse_the_key()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        await AssertProblemAsync(await http.SendAsync(Post("/jobs", """{"name":""}""", "k-fix")), HttpStatusCode.BadRequest, "name");
        Assert.Equal(HttpStatusCode.Created, (await http.SendAsync(Post("/jobs", """{"name":"fixed"}""", "k-fix"))).StatusCode);
    }

    [Fact]
    public async Task Keys_are_scoped_to_the_tenant()
    {
        var (_, a) = await fx.NewCustomerAsync();
        var (_, b) = await fx.NewCustomerAsync();
        const string body = """{"name":"same-key"}""";
        var ra = await fx.Api.ClientWithKey(a).SendAsync(Post("/jobs", body, "shared"));
        var rb = await fx.Api.ClientWithKey(b).SendAsync(Post("/jobs", body, "shared"));
        Assert.Equal(HttpStatusCode.Created, rb.StatusCode);
        Assert.NotEqual(ra.Headers.Location, rb.Headers.Location);
    }

    [Fact]
    public async Task A_key_over_255_characters_gets_400()
    {
        var (_, key) = await fx.NewCustomerAsync();
        await AssertProblemAsync(await fx.Api.ClientWithKey(key).SendAsync(Post("/jobs", """{"name":"x"}""", new string('k', 256))),
            HttpStatusCode.BadRequest, "Idempotency-Key");
    }

    /// <summary>
    /// What a process killed right after a keyed write's COMMIT leaves: the key's record still running with no answer
    /// stored, started <paramref name="minutesAgo"/> minutes ago (past 10, the takeover time).
    /// </summary>
    private async Task DiedAfterCommitAsync(long tenant, string key, int minutesAgo)
    {
        await using var conn = await fx.DataSource.OpenConnectionAsync();
        await Dapper.SqlMapper.ExecuteAsync(conn, """
            UPDATE idempotency SET state = 0, status_code = NULL, location = NULL, response = NULL,
                   created_at = created_at - INTERVAL @Minutes MINUTE
            WHERE tenant_id = @Tenant AND idem_key = @Key
            """, new { Minutes = minutesAgo, Tenant = tenant, Key = key });
    }
}
