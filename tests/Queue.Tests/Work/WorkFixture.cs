using Queue.Core;
using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Dapper;
using Microsoft.AspNetCore.Mvc.Testing;
using Microsoft.AspNetCore.TestHost;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;
using Microsoft.Extensions.Time.Testing;
using MySqlConnector;
using Queue.Api;
using Queue.Core.Claims;
using Queue.Core.Data;
using Queue.Core.Ordering;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Work;

/// <summary>
/// A database, the real Api on it with a fake clock (so ordering modes, backoffs and lease expiry are under the
/// test's control), a worker key, and helpers that create jobs the way the submission code does: rows plus lanes placed
/// by the real <see cref="OrderingLanes"/>.
/// </summary>
public class WorkFixture : DatabaseFixture
{
    /// <summary>An even UTC hour: smallest-first.</summary>
    public static readonly DateTimeOffset Start = new(2026, 11, 22, 2, 10, 0, TimeSpan.Zero);

    public FakeTimeProvider Clock { get; } = new(Start);

    public WebApplicationFactory<ApiEntry> Api { get; private set; } = null!;

    public string WorkerKey { get; private set; } = "";

    protected virtual IDictionary<string, string?> Settings => new Dictionary<string, string?>();

    /// <summary>Services a fixture replaces in the Api, after the fake clock.</summary>
    protected virtual void ConfigureServices(IServiceCollection services)
    {
    }

    public override async Task InitializeAsync()
    {
        await base.InitializeAsync();
        Api = new ApiFactory(ConnectionString, Settings).WithWebHostBuilder(b =>
            b.ConfigureTestServices(s =>
            {
                s.AddSingleton<TimeProvider>(Clock);
                ConfigureServices(s);
            }));
        _ = Api.Server;
        WorkerKey = await NewWorkerKeyAsync();
    }

    public override async Task DisposeAsync()
    {
        await Api.DisposeAsync();
        await base.DisposeAsync();
    }

    public HttpClient Worker()
    {
        var c = Api.CreateClient();
        c.DefaultRequestHeaders.Authorization = new System.Net.Http.Headers.AuthenticationHeaderValue("Bearer", WorkerKey);
        return c;
    }

    public T Service<T>() where T : notnull => Api.Services.GetRequiredService<T>();

    /// <summary>The Api's rewriter, but moving lanes in place through the bands (the swap never changes the band).</summary>
    public OrderingRewriter InPlaceRewriter() => new(
        Service<MySqlConnector.MySqlDataSource>(), Service<OrderingCalendar>(), Service<OrderingLanes>(), Service<TimeProvider>(),
        Microsoft.Extensions.Options.Options.Create(new OrderingOptions { RewriteMethod = OrderingOptions.InPlace }),
        Microsoft.Extensions.Logging.Abstractions.NullLogger<OrderingRewriter>.Instance);

    public DateTime Now => Clock.GetUtcNow().UtcDateTime;

    /// <summary>Creates a job of <paramref name="documents"/> documents, one item per document and task, as an upload would.</summary>
    public async Task<long> NewJobAsync(long tenantId, int documents, string[]? tasks = null, bool closed = true, string name = "job")
    {
        tasks ??= ["text"];
        var now = Now;
        var lanes = new OrderingLanes(new OrderingCalendar(Clock, Options.Create(new OrderingOptions())), Clock);
        await using var conn = await DataSource.OpenConnectionAsync();
        await using var tx = await conn.BeginReadCommittedAsync(default);
        var jobId = await conn.ExecuteScalarAsync<long>("""
            INSERT INTO jobs (tenant_id, name, state, tasks, documents, items_total, created_at, closed_at, updated_at)
            VALUES (@TenantId, @Name, @State, @Tasks, @Documents, @Total, @Now, @Closed, @Now);
            SELECT LAST_INSERT_ID();
            """, new { TenantId = tenantId, Name = name, State = closed ? 1 : 0, Tasks = string.Join(',', tasks), Documents = documents,
                Total = documents * tasks.Length, Now = now, Closed = closed ? now : (DateTime?)null }, tx);
        for (var d = 0; d < documents; d++)
        {
            var docId = await conn.ExecuteScalarAsync<long>("""
                INSERT INTO documents (job_id, tenant_id, name, content_type, size, sha256, created_at)
                VALUES (@JobId, @TenantId, @Name, 'text/plain', 5, UNHEX(SHA2('hello', 256)), @Now);
                SELECT LAST_INSERT_ID();
                """, new { JobId = jobId, TenantId = tenantId, Name = $"d{d}.txt", Now = now }, tx);
            await conn.ExecuteAsync("INSERT INTO document_content (document_id, content) VALUES (@Id, 'hello')", new { Id = docId }, tx);
            foreach (var task in tasks)
            {
                await conn.ExecuteAsync("""
                    INSERT INTO items (job_id, document_id, task, state, due_at, created_at, updated_at)
                    VALUES (@JobId, @DocId, @Task, 0, @Now, @Now, @Now)
                    """, new { JobId = jobId, DocId = docId, Task = task, Now = now }, tx);
            }
        }
        await lanes.PlaceAsync(conn, tx, jobId, tasks, default);
        await tx.CommitAsync();
        return jobId;
    }

    public async Task<T> ScalarAsync<T>(string sql, object? args = null)
    {
        await using var conn = await DataSource.OpenConnectionAsync();
        return (await conn.ExecuteScalarAsync<T>(sql, args))!;
    }

    public async Task<ItemRow> ItemAsync(long id)
    {
        await using var conn = await DataSource.OpenConnectionAsync();
        return await conn.QuerySingleAsync<ItemRow>(
            "SELECT id AS Id, job_id AS JobId, state AS State, attempts AS Attempts, last_error AS LastError, due_at AS DueAt FROM items WHERE id = @Id", new { Id = id });
    }

    public static async Task<JsonElement[]> ClaimAsync(HttpClient worker, object body)
    {
        using var r = await worker.PostAsJsonAsync("/next", body);
        if (r.StatusCode == HttpStatusCode.NoContent)
        {
            return [];
        }
        Assert.Equal(HttpStatusCode.OK, r.StatusCode);
        var json = await r.Content.ReadFromJsonAsync<JsonElement>();
        return json.GetProperty("items").EnumerateArray().ToArray();
    }

    public static async Task<JsonElement> ClaimOneAsync(HttpClient worker, object? body = null) =>
        Assert.Single(await ClaimAsync(worker, body ?? new { max = 1 }));

    public static Task<HttpResponseMessage> FinishAsync(HttpClient worker, JsonElement item, string verb, object? extra = null) =>
        worker.PostAsJsonAsync($"/items/{item.GetProperty("id").GetInt64()}/{verb}",
            extra ?? new { leaseToken = item.GetProperty("leaseToken").GetString() });
}
