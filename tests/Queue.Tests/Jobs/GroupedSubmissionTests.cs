using System.Net;
using System.Net.Http.Json;
using Microsoft.Extensions.DependencyInjection;
using MySqlConnector;
using Queue.Core.Jobs;
using Queue.Tests.Infrastructure;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Jobs;

/// <summary>Concurrent POST /jobs share a transaction (docs/DESIGN.md "Grouped submissions"), and each keeps its own outcome.</summary>
public sealed class GroupedSubmissionTests(ApiFixture fx) : IClassFixture<ApiFixture>
{
    [Fact]
    public async Task Concurrent_submissions_share_transactions_and_each_caller_gets_its_own_whole_job()
    {
        var (tenant, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        var created = await Task.WhenAll(Enumerable.Range(0, 48).Select(i => http.CreateJobAsync(new
        {
            name = $"grouped-{i}",
            tasks = new[] { "text" },
            documents = new[] { new { name = $"d{i}.txt", content = B64($"document {i}") } },
        })));

        var ids = created.Select(c => c.GetProperty("id").GetInt64()).ToList();
        Assert.Equal(48, ids.Distinct().Count());
        Assert.All(created, c => Assert.Equal(1, c.GetProperty("items").GetProperty("total").GetInt64()));
        Assert.Equal(48, await fx.CountAsync("SELECT COUNT(*) FROM items WHERE job_id IN @Ids", new { Ids = ids }));
        Assert.Equal(48, await fx.CountAsync("SELECT COUNT(*) FROM ordering WHERE job_id IN @Ids", new { Ids = ids }));
        // Jobs of one grouped transaction share its clock reading; 48 separate transactions would not.
        var groups = await fx.CountAsync("SELECT COUNT(DISTINCT created_at) FROM jobs WHERE tenant_id = @Id", new { tenant.Id });
        Assert.True(groups < 48, $"48 concurrent submissions made {groups} transactions");
    }

    [Fact]
    public async Task One_document_jobs_with_several_tasks_grouped_with_larger_jobs_get_their_own_document_for_every_item()
    {
        var (tenant, key) = await fx.NewCustomerAsync(settings: new Queue.Core.Security.TenantSettings(["text", "thumbnail", "ocr"]));
        var http = fx.Api.ClientWithKey(key);
        // Even i: one document (plain VALUES chained by LAST_INSERT_ID); odd i: three (multi-row VALUES matched by row number).
        var created = await Task.WhenAll(Enumerable.Range(0, 32).Select(i => http.CreateJobAsync(new
        {
            name = $"mixed-{i}",
            tasks = new[] { "text", "thumbnail", "ocr" },
            documents = Enumerable.Range(0, i % 2 == 0 ? 1 : 3).Select(d => new { name = $"j{i}-d{d}.txt", content = B64($"job {i} document {d}") }).ToArray(),
        })));

        foreach (var c in created)
        {
            var id = c.GetProperty("id").GetInt64();
            var documents = c.GetProperty("created").GetArrayLength();
            Assert.Equal(documents * 3, c.GetProperty("items").GetProperty("total").GetInt64());
            Assert.Equal(documents * 3, await fx.CountAsync(
                "SELECT COUNT(*) FROM items i JOIN documents d ON d.id = i.document_id AND d.job_id = i.job_id WHERE i.job_id = @Id", new { Id = id }));
            Assert.Equal(documents, await fx.CountAsync(
                "SELECT COUNT(*) FROM document_content dc JOIN documents d ON d.id = dc.document_id WHERE d.job_id = @Id", new { Id = id }));
            // The answer is built from what the transaction wrote; a later read must agree with it.
            using var status = await http.GetFromJsonAsync<System.Text.Json.JsonDocument>($"/jobs/{id}");
            Assert.Equal(c.GetProperty("createdAt").GetDateTime(), status!.RootElement.GetProperty("createdAt").GetDateTime());
            Assert.Equal(c.GetProperty("state").GetString(), status.RootElement.GetProperty("state").GetString());
            Assert.Equal(c.GetProperty("ordering").GetRawText(), status.RootElement.GetProperty("ordering").GetRawText());
            Assert.Equal(c.GetProperty("items").GetRawText(), status.RootElement.GetProperty("items").GetRawText());
        }
        var names = await fx.CountAsync(
            "SELECT COUNT(*) FROM documents d JOIN jobs j ON j.id = d.job_id WHERE j.tenant_id = @Id AND d.name LIKE CONCAT('j', SUBSTRING(j.name, 7), '-d%')", new { tenant.Id });
        Assert.Equal(16 + (16 * 3), names);
        // Every document holds its own bytes: "j{i}-d{d}.txt" holds "job {i} document {d}".
        var ownBytes = await fx.CountAsync("""
            SELECT COUNT(*) FROM documents d JOIN jobs j ON j.id = d.job_id JOIN document_content dc ON dc.document_id = d.id
            WHERE j.tenant_id = @Id AND dc.content = CONCAT('job ', SUBSTRING_INDEX(SUBSTRING(d.name, 2), '-d', 1), ' document ',
                SUBSTRING_INDEX(SUBSTRING_INDEX(d.name, '-d', -1), '.', 1))
            """, new { tenant.Id });
        Assert.Equal(16 + (16 * 3), ownBytes);
    }

    [Fact]
    public async Task A_job_with_more_documents_than_one_statement_can_carry_lands_whole_and_each_document_keeps_its_own_bytes()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        var batcher = fx.Api.Services.GetRequiredService<SubmissionBatcher>();
        // 17,000 documents: four placeholders each would be 68,000 in one statement, past the protocol's 65,535, so the
        // rows must go in several statements, each matched to its own bytes. Small jobs beside it share its group.
        var big = new PendingJob(tenant.Id, "big", ["text"], false,
            Enumerable.Range(0, 17_000).Select(k => new InlineDocument($"d{k}", "text/plain", System.Text.Encoding.UTF8.GetBytes($"bytes {k}"))).ToList());
        var small = Enumerable.Range(0, 8).Select(i => batcher.CreateAsync(new PendingJob(tenant.Id, $"small-{i}", ["text"], false,
            [new InlineDocument($"s{i}", "text/plain", System.Text.Encoding.UTF8.GetBytes($"small {i}"))]), default)).ToList();
        var created = await batcher.CreateAsync(big, default);
        await Task.WhenAll(small);

        Assert.Equal(17_000, created.Documents.Count);
        Assert.Equal(Enumerable.Range(0, 17_000).Select(k => $"d{k}"), created.Documents.Select(d => d.Name));
        Assert.True(created.Documents.Zip(created.Documents.Skip(1)).All(p => p.First.Id < p.Second.Id), "document ids rise in request order");
        Assert.Equal(17_000, await fx.CountAsync("""
            SELECT COUNT(*) FROM documents d JOIN document_content dc ON dc.document_id = d.id
            WHERE d.job_id = @Id AND dc.content = CONCAT('bytes ', SUBSTRING(d.name, 2))
            """, new { Id = created.JobId }));
        Assert.Equal(17_000, await fx.CountAsync("SELECT COUNT(*) FROM items WHERE job_id = @Id", new { Id = created.JobId }));
        Assert.Equal(8, await fx.CountAsync("""
            SELECT COUNT(*) FROM documents d JOIN document_content dc ON dc.document_id = d.id JOIN jobs j ON j.id = d.job_id
            WHERE j.tenant_id = @Id AND dc.content = CONCAT('small ', SUBSTRING(d.name, 2))
            """, new { tenant.Id }));
    }

    [Fact]
    public async Task A_submission_the_database_refuses_fails_alone_and_the_rest_of_its_group_lands()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        var batcher = fx.Api.Services.GetRequiredService<SubmissionBatcher>();
        PendingJob Job(long tenantId, int i) => new(tenantId, $"mixed-{i}", ["text"], false, [new InlineDocument($"d{i}", "text/plain", "x"u8.ToArray())]);

        // Tenant -1 does not exist: its jobs row breaks the foreign key, inside whatever group it lands in.
        var attempts = Enumerable.Range(0, 24).Select(i => batcher.CreateAsync(Job(i == 12 ? -1 : tenant.Id, i), default)).ToList();
        await Assert.ThrowsAsync<MySqlException>(() => attempts[12]);
        var landed = await Task.WhenAll(attempts.Where((_, i) => i != 12));

        Assert.Equal(23, landed.Select(l => l.JobId).Distinct().Count());
        Assert.Equal(23, await fx.CountAsync("SELECT COUNT(*) FROM jobs WHERE tenant_id = @Id", new { tenant.Id }));
        Assert.Equal(23, await fx.CountAsync("SELECT COUNT(*) FROM items i JOIN jobs j ON j.id = i.job_id WHERE j.tenant_id = @Id", new { tenant.Id }));
        Assert.Equal(0, await fx.CountAsync("SELECT COUNT(*) FROM jobs WHERE tenant_id = -1"));
    }

    [Fact]
    public async Task Concurrent_retries_with_one_idempotency_key_make_one_job_while_grouped()
    {
        var (tenant, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        const string body = """{"name":"same","tasks":["text"],"documents":[{"name":"a","content":"eA=="}]}""";
        var answers = await Task.WhenAll(Enumerable.Range(0, 8).Select(async _ =>
        {
            using var m = new HttpRequestMessage(HttpMethod.Post, U("/jobs")) { Content = Json(body) };
            m.Headers.TryAddWithoutValidation("Idempotency-Key", "grouped-retry");
            using var r = await http.SendAsync(m);
            return (r.StatusCode, Id: r.StatusCode == HttpStatusCode.Created ? (await r.Content.ReadFromJsonAsync<System.Text.Json.JsonElement>()).GetProperty("id").GetInt64() : 0);
        }));

        Assert.All(answers, a => Assert.Contains(a.StatusCode, new[] { HttpStatusCode.Created, HttpStatusCode.Conflict }));
        Assert.Single(answers.Where(a => a.Id > 0).Select(a => a.Id).Distinct());
        Assert.Equal(1, await fx.CountAsync("SELECT COUNT(*) FROM jobs WHERE tenant_id = @Id", new { tenant.Id }));
    }
}
