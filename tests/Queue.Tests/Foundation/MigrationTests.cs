using Dapper;
using MySqlConnector;
using Queue.Local;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Foundation;

public sealed class MigrationTests
{
    [Fact]
    public async Task Two_api_processes_starting_at_once_on_an_empty_database_apply_each_migration_exactly_once()
    {
        var server = await SharedMariaDb.GetAsync();
        var name = "t_mig_" + Guid.NewGuid().ToString("N")[..10];
        var cs = await server.CreateDatabaseAsync(name);

        await using var a = ServiceProcess.Start("Queue.Api", cs);
        await using var b = ServiceProcess.Start("Queue.Api", cs);
        await Task.WhenAll(a.WaitHealthyAsync("/readyz"), b.WaitHealthyAsync("/readyz"));

        await using var conn = new MySqlConnection(cs);
        var versions = (await conn.QueryAsync<string>("SELECT version FROM changelog WHERE type = 0 AND success = 1")).ToList();
        var files = Directory.GetFiles(Path.Combine(AppContext.BaseDirectory, "migrations"), "V*__*.sql");
        Assert.Equal(files.Length, versions.Count);
        Assert.Equal(versions.Count, versions.Distinct().Count());
        Assert.Contains("ordering", await conn.QueryAsync<string>("SHOW TABLES"));
    }
}
