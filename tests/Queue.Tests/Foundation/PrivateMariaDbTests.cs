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

    [Fact]
    public async Task Throwaway_server_directories_that_nothing_owns_any_more_are_removed_and_no_other()
    {
        var parent = Directory.CreateTempSubdirectory("leftovers-").FullName;
        try
        {
            using var ended = System.Diagnostics.Process.Start("true")!;
            await ended.WaitForExitAsync();
            var hourAgo = DateTime.UtcNow.AddHours(-1);
            string Dir(string name, int? pid, DateTime modified)
            {
                var dir = Directory.CreateDirectory(Path.Combine(parent, name)).FullName;
                if (pid is { } p)
                {
                    File.WriteAllText(Path.Combine(dir, "mariadbd.pid"), p.ToString(System.Globalization.CultureInfo.InvariantCulture) + "\n");
                }
                Directory.SetLastWriteTimeUtc(dir, modified);
                return dir;
            }
            var deadServer = Dir(PrivateMariaDb.EphemeralPrefix + "dead", ended.Id, hourAgo);
            var neverStarted = Dir(PrivateMariaDb.EphemeralPrefix + "install", null, hourAgo);
            var installing = Dir(PrivateMariaDb.EphemeralPrefix + "fresh", null, DateTime.UtcNow);
            var live = Dir(PrivateMariaDb.EphemeralPrefix + "live", Environment.ProcessId, hourAgo);
            var notOurs = Dir("other-dir", null, hourAgo);

            Assert.Equal(2, PrivateMariaDb.RemoveLeftovers(parent, TimeSpan.FromMinutes(10)));

            Assert.False(Directory.Exists(deadServer));
            Assert.False(Directory.Exists(neverStarted));
            Assert.True(Directory.Exists(installing));
            Assert.True(Directory.Exists(live));
            Assert.True(Directory.Exists(notOurs));
        }
        finally
        {
            Directory.Delete(parent, recursive: true);
        }
    }
}
