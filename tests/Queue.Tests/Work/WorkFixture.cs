using Queue.Core;
using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Dapper;
using Microsoft.AspNetCore.Mvc.Testing;
using Microsoft.AspNetCore.TestHost;
using Microsoft.Extensions.DependencyInjection;
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
    public Task<long> NewJobAsync(long tenantId, int documents, string[]? tasks = null, bool closed = true, string name = "job") =>
        JobSeed.InsertAsync(DataSource, Clock, tenantId, name, documents, tasks ?? ["text"], closed, static (_, d) => ($"d{d}.txt", "hello"u8.ToArray()));

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
