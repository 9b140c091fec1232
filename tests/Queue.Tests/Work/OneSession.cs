using Dapper;
using MySqlConnector;
using Queue.Tests.Infrastructure;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Work;

/// <summary>What the tests that drive <see cref="Queue.Core.Claims.ClaimEngine"/> on one database session share.</summary>
internal static class OneSession
{
    /// <summary>
    /// A pool of one connection that is never reset when it goes back: whatever the session holds (an open transaction
    /// and its locks, its status counters) is still there for the next use.
    /// </summary>
    public static MySqlDataSource Pool(string connectionString) =>
        new MySqlDataSourceBuilder(new MySqlConnectionStringBuilder(connectionString) { ConnectionReset = false, MaximumPoolSize = 1 }.ConnectionString).Build();

    /// <summary>A job of one document and the one task "text", created through the Api; its id.</summary>
    public static async Task<long> OneItemJobAsync(this ApiFixture fx, string key, string name) =>
        (await fx.Api.ClientWithKey(key).CreateJobAsync(new
        {
            name,
            tasks = new[] { "text" },
            documents = new[] { new { name = "d.txt", content = B64("d") } },
        })).GetProperty("id").GetInt64();

    /// <summary>Rows read through an index by the pool's one session so far (the next entry, and the first of each lookup).</summary>
    public static async Task<long> IndexReadsAsync(MySqlDataSource db)
    {
        await using var conn = await db.OpenConnectionAsync();
        var rows = await conn.QueryAsync<(string Name, string Value)>(
            "SHOW SESSION STATUS WHERE Variable_name IN ('Handler_read_next', 'Handler_read_key')");
        return rows.Sum(r => long.Parse(r.Value, System.Globalization.CultureInfo.InvariantCulture));
    }
}
