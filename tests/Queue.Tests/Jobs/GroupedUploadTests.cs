using System.Net;
using System.Net.Http.Headers;
using System.Security.Cryptography;
using System.Text;
using Dapper;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Time.Testing;
using Queue.Core.Jobs;
using Queue.Tests.Infrastructure;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Jobs;

/// <summary>Concurrent small uploads share a transaction (docs/DESIGN.md "Grouped submissions"), and each keeps its own outcome.</summary>
public sealed class GroupedUploadTests(ApiFixture fx) : IClassFixture<ApiFixture>
{
    [Fact]
    public async Task Concurrent_small_uploads_to_several_jobs_share_transactions_and_each_lands_whole()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        var jobs = new List<long>();
        for (var j = 0; j < 4; j++)
        {
            jobs.Add(await http.OpenJobAsync(["text"]));
        }

        var answers = await Task.WhenAll(Enumerable.Range(0, 48).Select(async i =>
        {
            using var r = await http.UploadRawAsync(jobs[i % 4], Encoding.UTF8.GetBytes($"upload {i}"), $"u{i}.txt");
            Assert.Equal(HttpStatusCode.Created, r.StatusCode);
            var doc = (await r.BodyAsync()).GetProperty("documents")[0];
            return (Job: jobs[i % 4], Id: doc.GetProperty("id").GetInt64(), Sha: doc.GetProperty("sha256").GetString(), Text: $"upload {i}");
        }));

        foreach (var a in answers)
        {
            Assert.Equal(Convert.ToHexStringLower(SHA256.HashData(Encoding.UTF8.GetBytes(a.Text))), a.Sha);
            // The document, its bytes and its item belong to the job it was sent to, and its id is the one answered.
            Assert.Equal(1, await fx.CountAsync("""
                SELECT COUNT(*) FROM documents d JOIN document_content c ON c.document_id = d.id JOIN items i ON i.document_id = d.id
                WHERE d.id = @Id AND d.job_id = @Job AND i.job_id = @Job AND CAST(c.content AS CHAR) = @Text
                """, new { a.Id, a.Job, a.Text }));
        }
        Assert.Equal(48, answers.Select(a => a.Id).Distinct().Count());
        foreach (var job in jobs)
        {
            Assert.Equal(12, await fx.CountAsync("SELECT documents FROM jobs WHERE id = @Id AND items_total = 12", new { Id = job }));
            Assert.Equal(1, await fx.CountAsync("SELECT COUNT(*) FROM ordering WHERE job_id = @Id", new { Id = job }));
        }
        // Uploads of one grouped transaction share its clock reading; 48 separate transactions would not.
        var groups = await fx.CountAsync("SELECT COUNT(DISTINCT created_at) FROM documents WHERE job_id IN @Ids", new { Ids = jobs });
        Assert.True(groups < 48, $"48 concurrent uploads made {groups} transactions");
    }

    [Fact]
    public async Task An_upload_to_a_job_closed_before_its_group_commits_gets_a_conflict_and_writes_nothing_while_the_others_land()
    {
        var (tenant, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        var open = await http.OpenJobAsync(["text"]);
        var closed = await http.OpenJobAsync(["text"]);
        (await http.PostAsync(U($"/jobs/{closed}/close"), null)).EnsureSuccessStatusCode();
        var batcher = fx.Api.Services.GetRequiredService<UploadBatcher>();
        SmallUpload Upload(long job, int i) => new(tenant.Id, job, ["text"],
            [new BufferedDocument($"d{i}.txt", "text/plain", Encoding.UTF8.GetBytes($"d{i}"), SHA256.HashData(Encoding.UTF8.GetBytes($"d{i}")))]);

        var results = await Task.WhenAll(Enumerable.Range(0, 24).Select(i => batcher.UploadAsync(Upload(i == 12 ? closed : open, i), default)));

        Assert.Equal(Outcome.Conflict, results[12].Outcome);
        Assert.All(results.Where((_, i) => i != 12), r => Assert.Equal(Outcome.Ok, r.Outcome));
        Assert.Equal(0, await fx.CountAsync("SELECT COUNT(*) FROM documents WHERE job_id = @Id", new { Id = closed }));
        Assert.Equal(0, await fx.CountAsync("SELECT COUNT(*) FROM items WHERE job_id = @Id", new { Id = closed }));
        Assert.Equal(23, await fx.CountAsync("SELECT COUNT(*) FROM items WHERE job_id = @Id", new { Id = open }));
        Assert.Equal(23, await fx.CountAsync("SELECT items_total FROM jobs WHERE id = @Id", new { Id = open }));
    }

    [Fact]
    public async Task A_job_closed_behind_the_processes_back_still_refuses_uploads_and_another_tenant_still_gets_404()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var (_, otherKey) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        var job = await http.OpenJobAsync(["text"]);
        using (var first = await http.UploadRawAsync(job, "first"u8.ToArray()))
        {
            Assert.Equal(HttpStatusCode.Created, first.StatusCode); // the process now remembers the job as open
        }

        using (var foreign = await fx.Api.ClientWithKey(otherKey).UploadRawAsync(job, "not yours"u8.ToArray()))
        {
            Assert.Equal(HttpStatusCode.NotFound, foreign.StatusCode);
        }
        // Closed by another process (the Admin, another Api node): this one's memory of the job is stale.
        await using (var conn = await fx.DataSource.OpenConnectionAsync())
        {
            await conn.ExecuteAsync("UPDATE jobs SET state = 1, closed_at = NOW(6) WHERE id = @Id", new { Id = job });
        }
        using (var late = await http.UploadRawAsync(job, "too late"u8.ToArray()))
        {
            Assert.Equal(HttpStatusCode.Conflict, late.StatusCode);
        }
        Assert.Equal(1, await fx.CountAsync("SELECT COUNT(*) FROM documents WHERE job_id = @Id", new { Id = job }));
        Assert.Equal(1, await fx.CountAsync("SELECT items_total FROM jobs WHERE id = @Id", new { Id = job }));
    }

    [Fact]
    public void A_job_found_open_is_remembered_for_its_tenant_until_its_lifetime_ends_or_it_is_forgotten()
    {
        var clock = new FakeTimeProvider(DateTimeOffset.UnixEpoch);
        var cache = new OpenJobCache(clock);
        Assert.False(cache.TryGet(7, out _, out _));
        cache.Remember(7, 42, ["text"]);
        Assert.True(cache.TryGet(7, out var tenant, out var tasks));
        Assert.Equal(42, tenant);
        Assert.Equal(["text"], tasks);
        clock.Advance(OpenJobCache.Lifetime);
        Assert.False(cache.TryGet(7, out _, out _));
        cache.Remember(7, 42, ["text"]);
        cache.Forget(7);
        Assert.False(cache.TryGet(7, out _, out _));
    }

    [Fact]
    public async Task A_multipart_upload_of_small_documents_and_one_past_the_group_limit_stores_every_document_in_order()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        var job = await http.OpenJobAsync(["text"]);
        var large = RandomNumberGenerator.GetBytes(300 * 1024); // past the grouped-upload limit and the probe: streamed
        var parts = new (string Name, byte[] Bytes)[] { ("a.txt", "first"u8.ToArray()), ("b.txt", "second"u8.ToArray()), ("big.bin", large), ("c.txt", "last"u8.ToArray()) };
        using var form = new MultipartFormDataContent();
        foreach (var (name, bytes) in parts)
        {
            var part = new ByteArrayContent(bytes);
            part.Headers.ContentType = new MediaTypeHeaderValue("application/octet-stream");
            form.Add(part, "file", name);
        }

        using var r = await http.PostAsync(U($"/jobs/{job}/documents"), form);

        Assert.Equal(HttpStatusCode.Created, r.StatusCode);
        var docs = (await r.BodyAsync()).GetProperty("documents").EnumerateArray().ToList();
        Assert.Equal(parts.Select(p => p.Name), docs.Select(d => d.GetProperty("name").GetString()));
        for (var i = 0; i < parts.Length; i++)
        {
            Assert.Equal(Convert.ToHexStringLower(SHA256.HashData(parts[i].Bytes)), docs[i].GetProperty("sha256").GetString());
            Assert.Equal(1, await fx.CountAsync("SELECT COUNT(*) FROM document_content WHERE document_id = @Id AND SHA2(content, 256) = @Sha",
                new { Id = docs[i].GetProperty("id").GetInt64(), Sha = Convert.ToHexStringLower(SHA256.HashData(parts[i].Bytes)) }));
        }
        Assert.Equal(4, await fx.CountAsync("SELECT items_total FROM jobs WHERE id = @Id", new { Id = job }));
    }
}
