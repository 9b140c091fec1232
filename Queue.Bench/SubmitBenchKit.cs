using System.Net;
using System.Net.Http.Headers;
using Microsoft.Extensions.Options;
using MySqlConnector;
using Queue.Bench.Harness;
using Queue.Core.Data;
using Queue.Core.Security;

namespace Queue.Bench;

/// <summary>Shared set-up of the submission scenarios (ingest, upload, status): a tenant without a rate limit and its key.</summary>
internal static class SubmitBenchKit
{
    public static MySqlDataSource DataSource(BenchEnvironment env) => new MySqlDataSourceBuilder(QueueDatabase.Normalize(env.ConnectionString)).Build();

    /// <summary>Rate limit 0: the scenarios measure the service, not the per-tenant limiter.</summary>
    public static async Task<(Tenant Tenant, string Key)> CustomerAsync(MySqlDataSource db, string name, IReadOnlyList<string> tasks)
    {
        var tenant = await new TenantService(db, TimeProvider.System).CreateAsync(name, new TenantSettings(tasks, RateLimit: 0, RateBurst: 0), default);
        var key = await new ApiKeyService(db, TimeProvider.System, Options.Create(new AuthOptions())).IssueAsync(KeyRole.Customer, tenant.Id, "bench", default);
        return (tenant, key.Secret);
    }

    /// <summary>One client for the whole run, with bounded connection lifetimes (never one HttpClient per call).</summary>
    public static HttpClient Client(string baseUrl, string key, int connections) => new(new SocketsHttpHandler
    {
        PooledConnectionLifetime = TimeSpan.FromMinutes(10),
        PooledConnectionIdleTimeout = TimeSpan.FromMinutes(1),
        MaxConnectionsPerServer = connections,
        AutomaticDecompression = DecompressionMethods.None,
    })
    {
        BaseAddress = new Uri(baseUrl),
        Timeout = TimeSpan.FromMinutes(2),
        DefaultRequestHeaders = { Authorization = new AuthenticationHeaderValue("Bearer", key) },
    };
}
