using Dapper;
using MySqlConnector;

namespace Queue.Tests.Infrastructure;

/// <summary>Server sessions of one test database, for tests of what a connection the server dropped costs.</summary>
internal static class ServerSessions
{
    /// <summary>
    /// Kills every session of <paramref name="db"/>'s database but the one that does it (held connections and the
    /// pool's idle ones among them), as a server restart would; returns how many. Other databases' sessions, other
    /// test classes', are left alone.
    /// </summary>
    public static async Task<int> KillAllAsync(MySqlDataSource db)
    {
        await using var conn = await db.OpenConnectionAsync();
        var others = (await conn.QueryAsync<long>(
            "SELECT id FROM information_schema.processlist WHERE db = DATABASE() AND id <> CONNECTION_ID()")).AsList();
        foreach (var id in others)
        {
            await conn.ExecuteAsync($"KILL CONNECTION {id}");
        }
        return others.Count;
    }
}
