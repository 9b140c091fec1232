using Dapper;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Sql;

namespace Queue.Core.Admin;

/// <summary>
/// The minute snapshot behind the Admin dashboard's charts: per tenant, items by state (from the jobs counters and
/// live leases) and the claims and completions of the minute (the change in <c>tenant_counters</c>, which the Api
/// processes flush, since the previous snapshot). Idempotent per minute.
/// </summary>
public sealed class SnapshotService(MySqlDataSource db, TimeProvider clock)
{
    /// <summary>Records the snapshot for the minute containing <paramref name="at"/> (default now); false if it existed.</summary>
    public Task<bool> TakeAsync(DateTimeOffset? at = null, CancellationToken ct = default) =>
        Retry.OnDeadlockAsync(async c =>
        {
            var now = clock.GetUtcNow().UtcDateTime;
            var instant = (at ?? clock.GetUtcNow()).UtcDateTime;
            var minute = new DateTime(instant.Ticks - (instant.Ticks % TimeSpan.TicksPerMinute), DateTimeKind.Utc);
            await using var conn = await db.OpenConnectionAsync(c);
            // Consistent reads, outside the transaction: they lock nothing that claims or completions need.
            var totals = (await conn.QueryAsync<TenantTotals>(new CommandDefinition(MaintenanceSql.TenantTotals, cancellationToken: c))).AsList();
            var leases = (await conn.QueryAsync<(long TenantId, long Leased)>(new CommandDefinition(MaintenanceSql.TenantLiveLeases, new { Now = now }, cancellationToken: c)))
                .ToDictionary(x => x.TenantId, x => x.Leased);

            await using var tx = await conn.BeginReadCommittedAsync(c);
            var seen = (await conn.QueryAsync<(long TenantId, long Claims, long Completions)>(new CommandDefinition(MaintenanceSql.SnapshotStateForUpdate, transaction: tx, cancellationToken: c)))
                .ToDictionary(x => x.TenantId);
            if (await conn.ExecuteScalarAsync<long>(new CommandDefinition(MaintenanceSql.SnapshotExists, new { At = minute }, tx, cancellationToken: c)) > 0)
            {
                await tx.RollbackAsync(c);
                return false;
            }
            foreach (var t in totals)
            {
                var leased = Math.Min(leases.GetValueOrDefault(t.TenantId), Math.Max(0, t.Active));
                seen.TryGetValue(t.TenantId, out var before);
                await conn.ExecuteAsync(new CommandDefinition(MaintenanceSql.InsertSnapshot, new
                {
                    At = minute,
                    t.TenantId,
                    Ready = Math.Max(0, t.Active - leased),
                    Leased = leased,
                    t.Done,
                    t.Dead,
                    t.Cancelled,
                    // A counter that went backwards (restored database) starts the count again rather than going negative.
                    Claims = t.Claims >= before.Claims ? t.Claims - before.Claims : t.Claims,
                    Completions = t.Completions >= before.Completions ? t.Completions - before.Completions : t.Completions,
                }, tx, cancellationToken: c));
                await conn.ExecuteAsync(new CommandDefinition(MaintenanceSql.SaveSnapshotState,
                    new { t.TenantId, t.Claims, t.Completions, At = minute }, tx, cancellationToken: c));
            }
            await tx.CommitAsync(c);
            return true;
        }, ct);

    private sealed record TenantTotals(long TenantId, long Active, long Done, long Dead, long Cancelled, long Claims, long Completions);
}
