using System.Diagnostics;
using System.Globalization;
using MySqlConnector;

namespace Queue.Core.Data;

/// <summary>
/// Where reads that may lag go: the replica named by <c>ConnectionStrings:QueueRead</c> while it answers and is at most
/// <c>Cluster:MaxReplicaLagSeconds</c> behind, otherwise the primary (so a stopped, broken or lagging replica costs a
/// read nothing but the primary's time). Without a replica every read goes to the primary. Which endpoint reads where is
/// in docs/DESIGN.md "Scaling out"; anything that must read its own writes never comes here.
/// </summary>
public sealed class ReadSource : IAsyncDisposable
{
    /// <summary>After a replica fails to answer, reads stay on the primary this long before it is tried again.</summary>
    private static readonly TimeSpan DownFor = TimeSpan.FromSeconds(5);

    private readonly MySqlDataSource primary;
    private readonly MySqlDataSource? replica;
    private readonly double maxLagSeconds;
    private long downUntil;
    private long lagBits = BitConverter.DoubleToInt64Bits(double.NaN); // NaN: unknown

    public ReadSource(MySqlDataSource primary, string? replicaConnectionString, double maxLagSeconds)
    {
        this.primary = primary;
        this.maxLagSeconds = maxLagSeconds;
        if (!string.IsNullOrWhiteSpace(replicaConnectionString))
        {
            // A replica that stops answering must cost a read a short wait, not the driver's default 15 s.
            var csb = new MySqlConnectionStringBuilder(QueueDatabase.Normalize(replicaConnectionString)) { ConnectionTimeout = 2 };
            replica = new MySqlDataSourceBuilder(csb.ConnectionString).Build();
        }
    }

    public bool HasReplica => replica is not null;

    /// <summary>The replica's lag as last measured (Seconds_Behind_Master); null without a replica, or when it is stopped or not replicating.</summary>
    public double? LagSeconds => BitConverter.Int64BitsToDouble(Interlocked.Read(ref lagBits)) is var l && HasReplica && !double.IsNaN(l) ? l : null;

    /// <summary>Whether reads go to the replica now.</summary>
    public bool ReplicaInUse => replica is not null && Stopwatch.GetTimestamp() >= Interlocked.Read(ref downUntil)
        && LagSeconds is { } lag && lag <= maxLagSeconds;

    /// <summary>A connection for a read that may lag: the replica's when it is in use and answers, else the primary's.</summary>
    public async ValueTask<MySqlConnection> OpenAsync(CancellationToken ct)
    {
        if (ReplicaInUse)
        {
            try
            {
                return await replica!.OpenConnectionAsync(ct);
            }
            catch (MySqlException)
            {
                MarkDown();
            }
        }
        return await primary.OpenConnectionAsync(ct);
    }

    /// <summary>Measures the replica's lag (every few seconds, from Cluster's ReadSourceMonitor).</summary>
    public async Task CheckAsync(CancellationToken ct)
    {
        if (replica is null)
        {
            return;
        }
        try
        {
            await using var conn = await replica.OpenConnectionAsync(ct);
            await using var cmd = new MySqlCommand(Sql.ClusterSql.ReplicaStatus, conn);
            await using var reader = await cmd.ExecuteReaderAsync(ct);
            double? lag = null;
            if (await reader.ReadAsync(ct))
            {
                var at = reader.GetOrdinal("Seconds_Behind_Master");
                lag = reader.IsDBNull(at) ? null : Convert.ToDouble(reader.GetValue(at), CultureInfo.InvariantCulture);
            }
            SetLag(lag);
        }
        catch (MySqlException)
        {
            SetLag(null);
            MarkDown();
        }
    }

    private void SetLag(double? lag) => Interlocked.Exchange(ref lagBits, BitConverter.DoubleToInt64Bits(lag ?? double.NaN));

    private void MarkDown() => Interlocked.Exchange(ref downUntil, Stopwatch.GetTimestamp() + (long)(DownFor.TotalSeconds * Stopwatch.Frequency));

    public async ValueTask DisposeAsync()
    {
        if (replica is not null)
        {
            await replica.DisposeAsync();
        }
    }
}
