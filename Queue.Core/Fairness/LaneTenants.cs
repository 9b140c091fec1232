using MySqlConnector;
using Queue.Core.Sql;

namespace Queue.Core.Fairness;

/// <summary>
/// The tenants with unblocked lanes in the ordering table, at a cost that grows with tenants, never with lanes: one round
/// trip of index probes (<see cref="FairnessSql.TenantProbes"/>) sized by the tenants found last time, and another from
/// the last one found while every probe finds one.
/// </summary>
public sealed class LaneTenants
{
    /// <summary>Tenants the last call found: the next one sends a few more probes than that.</summary>
    private int lastFound;

    /// <summary>Adds the tenants with unblocked lanes of <paramref name="task"/>, or of any task, to <paramref name="into"/>.</summary>
    public async Task AddAsync(MySqlConnection conn, string? task, ISet<long> into, CancellationToken ct)
    {
        var after = long.MinValue;
        var found = 0;
        while (true)
        {
            var probes = Math.Clamp(Volatile.Read(ref lastFound) + 2, 4, FairnessSql.MaxProbes);
            await using var cmd = new MySqlCommand(task is null ? FairnessSql.TenantProbes(probes) : FairnessSql.TenantProbesForTask(probes), conn);
            cmd.Parameters.AddWithValue("@After", after);
            if (task is not null)
            {
                cmd.Parameters.AddWithValue("@Task", task);
            }
            var round = 0;
            await using (var reader = await cmd.ExecuteReaderAsync(ct))
            {
                do
                {
                    while (await reader.ReadAsync(ct))
                    {
                        after = Convert.ToInt64(reader.GetValue(0), System.Globalization.CultureInfo.InvariantCulture);
                        into.Add(after);
                        round++;
                    }
                }
                while (await reader.NextResultAsync(ct));
            }
            found += round;
            if (round < probes)
            {
                Volatile.Write(ref lastFound, found);
                return;
            }
        }
    }
}
