using Dapper;
using MySqlConnector;
using Queue.Local;

namespace Queue.Tests.Foundation;

public sealed class PrivateMariaDbTests
{
    [Fact]
    public async Task A_private_server_runs_with_the_chosen_settings_and_leaves_nothing_behind_when_stopped()
    {
        var db = await PrivateMariaDb.StartEphemeralAsync("128M");
        var dir = db.Directory;
        var pid = int.Parse(await File.ReadAllTextAsync(Path.Combine(dir, "mariadbd.pid")), System.Globalization.CultureInfo.InvariantCulture);
        await using (var conn = new MySqlConnection(db.ServerConnectionString))
        {
            var vars = (await conn.QueryAsync<(string Name, string Value)>(
                "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('innodb_flush_log_at_trx_commit','log_bin','max_allowed_packet','tx_isolation','transaction_isolation','bind_address')"))
                .ToDictionary(v => v.Name, v => v.Value);
            Assert.Equal("1", vars["innodb_flush_log_at_trx_commit"]);
            Assert.Equal("OFF", vars["log_bin"]);
            Assert.True(long.Parse(vars["max_allowed_packet"], System.Globalization.CultureInfo.InvariantCulture) >= 64L * 1024 * 1024);
            Assert.Equal("READ-COMMITTED", vars.GetValueOrDefault("transaction_isolation") ?? vars["tx_isolation"]);
            Assert.Equal("127.0.0.1", vars["bind_address"]);
        }

        await db.DisposeAsync();

        Assert.False(Directory.Exists(dir));
        Assert.False(File.Exists($"/proc/{pid}/status") && !(await File.ReadAllTextAsync($"/proc/{pid}/status")).Contains("State:\tZ", StringComparison.Ordinal));
    }
}
