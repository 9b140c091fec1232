using System.Globalization;
using MySqlConnector;

namespace Queue.Local;

/// <summary>
/// A private primary and a replica kept by MariaDB's own GTID replication, for <c>scripts/cluster.sh</c>, the cluster
/// tests and <c>Queue.Bench cluster</c>. The primary writes a row-based binary log (one more write per commit than the
/// one-box server, which has none); the replica is read-only and replays from the primary's first transaction.
/// </summary>
public sealed class ReplicatedMariaDb : IAsyncDisposable
{
    private readonly bool tiedToThisProcess;
    private readonly bool ephemeral;

    private ReplicatedMariaDb(PrivateMariaDb primary, PrivateMariaDb replica, bool tiedToThisProcess, bool ephemeral)
    {
        Primary = primary;
        Replica = replica;
        this.tiedToThisProcess = tiedToThisProcess;
        this.ephemeral = ephemeral;
    }

    public PrivateMariaDb Primary { get; }

    public PrivateMariaDb Replica { get; private set; }

    private const string SmallRedoLog = "--innodb-log-file-size=64M";

    private static IReadOnlyList<string> PrimaryArgs =>
        ["--server-id=1", "--log-bin=primary-bin", "--binlog-format=ROW", "--gtid-strict-mode=ON"];

    private static IReadOnlyList<string> ReplicaArgs =>
        ["--server-id=2", "--read-only=ON", "--relay-log=replica-relay", "--gtid-strict-mode=ON", "--skip-log-bin"];

    /// <summary>Throwaway pair (tests, benchmarks): both servers and their directories go when this process exits.</summary>
    public static async Task<ReplicatedMariaDb> StartEphemeralAsync(CancellationToken ct = default)
    {
        // A small redo log: a throwaway pair holds little, and two 1 GB log files written at start and deleted at the end
        // are seconds of disk traffic that land on whatever runs next.
        var primary = await PrivateMariaDb.StartEphemeralAsync("256M", [.. PrimaryArgs, SmallRedoLog], ct);
        var replica = await PrivateMariaDb.StartEphemeralAsync("256M", [.. ReplicaArgs, SmallRedoLog], ct);
        await FollowAsync(replica, primary.Port, ct);
        return new ReplicatedMariaDb(primary, replica, tiedToThisProcess: true, ephemeral: true);
    }

    /// <summary>Starts (or reuses) the pair in two directories, as <c>scripts/cluster.sh</c> does.</summary>
    public static async Task<ReplicatedMariaDb> StartOrAttachAsync(string primaryDirectory, int primaryPort, string replicaDirectory, int replicaPort,
        bool tiedToThisProcess, CancellationToken ct = default)
    {
        var primary = await PrivateMariaDb.StartOrAttachAsync(primaryDirectory, primaryPort, tiedToThisProcess, PrimaryArgs, ct);
        var replica = await PrivateMariaDb.StartOrAttachAsync(replicaDirectory, replicaPort, tiedToThisProcess, ReplicaArgs, ct);
        await FollowAsync(replica, primary.Port, ct);
        return new ReplicatedMariaDb(primary, replica, tiedToThisProcess, ephemeral: false);
    }

    /// <summary>Stops the replica's server (a test of reads falling back to the primary).</summary>
    public ValueTask StopReplicaAsync() => Replica.DisposeAsync();

    /// <summary>Starts the replica again in its directory and port; it resumes replication from its GTID position.</summary>
    public async Task StartReplicaAsync(CancellationToken ct = default)
    {
        Replica = ephemeral
            ? await PrivateMariaDb.StartInDirectoryAsync(Replica.Directory, Replica.Port, [.. ReplicaArgs, SmallRedoLog], ct)
            : await PrivateMariaDb.StartOrAttachAsync(Replica.Directory, Replica.Port, tiedToThisProcess, ReplicaArgs, ct);
        await FollowAsync(Replica, Primary.Port, ct);
    }

    /// <summary>Waits until the replica has applied everything the primary had committed when this was called.</summary>
    public async Task WaitCaughtUpAsync(TimeSpan timeout, CancellationToken ct = default)
    {
        string position;
        await using (var conn = new MySqlConnection(Primary.ServerConnectionString))
        {
            await conn.OpenAsync(ct);
            await using var cmd = new MySqlCommand("SELECT @@gtid_binlog_pos", conn);
            position = Convert.ToString(await cmd.ExecuteScalarAsync(ct), CultureInfo.InvariantCulture) ?? "";
        }
        await using var r = new MySqlConnection(Replica.ServerConnectionString);
        await r.OpenAsync(ct);
        await using var wait = new MySqlCommand("SELECT MASTER_GTID_WAIT(@Pos, @Seconds)", r);
        wait.Parameters.AddWithValue("@Pos", position);
        wait.Parameters.AddWithValue("@Seconds", timeout.TotalSeconds);
        wait.CommandTimeout = (int)timeout.TotalSeconds + 5;
        if (Convert.ToInt32(await wait.ExecuteScalarAsync(ct), CultureInfo.InvariantCulture) != 0)
        {
            throw new TimeoutException($"the replica did not reach the primary's GTID position {position} within {timeout}");
        }
    }

    /// <summary>
    /// Points the replica at the primary with GTID auto-positioning, unless it already follows it (a restarted
    /// replica resumes by itself from its own position).
    /// </summary>
    private static async Task FollowAsync(PrivateMariaDb replica, int primaryPort, CancellationToken ct)
    {
        await using var conn = new MySqlConnection(replica.ServerConnectionString);
        await conn.OpenAsync(ct);
        await using (var status = new MySqlCommand("SHOW SLAVE STATUS", conn))
        await using (var reader = await status.ExecuteReaderAsync(ct))
        {
            if (await reader.ReadAsync(ct))
            {
                return;
            }
        }
        // Host, port and user are not parameters in CHANGE MASTER; the port is an int and the rest are constants.
        var sql = string.Create(CultureInfo.InvariantCulture,
            $"CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT={primaryPort}, MASTER_USER='root', MASTER_PASSWORD='', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1; START SLAVE");
        await using var change = new MySqlCommand(sql, conn);
        await change.ExecuteNonQueryAsync(ct);
    }

    public async ValueTask DisposeAsync()
    {
        await Replica.DisposeAsync();
        await Primary.DisposeAsync();
    }
}
