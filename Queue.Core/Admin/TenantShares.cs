namespace Queue.Core.Admin;

/// <summary>
/// One tenant's part of the minute: <paramref name="Share"/> of all claims in it, and <paramref name="Entitled"/>, what its
/// weight gives it among the tenants that had work.
/// </summary>
public sealed record TenantShare(long TenantId, string TenantName, int Weight, long Claims, long Ready, double Share, double Entitled);

/// <summary>
/// Each tenant's share of the claims in the newest minute snapshot, beside its weight. The snapshot is the Scheduler's
/// (the change in <c>tenant_counters</c>, which every Api process adds to), so it covers the claims of all Api processes
/// and costs a row per tenant, whatever the depth of the queue.
/// </summary>
/// <param name="At">The minute's end (the snapshot's minute); null when the Scheduler has recorded none.</param>
public sealed record TenantShares(DateTime? At, IReadOnlyList<TenantShare> Tenants)
{
    public long Claims => Tenants.Sum(t => t.Claims);

    /// <summary>
    /// A tenant had work in the minute if it was claimed from or had items ready at its end: the tenant-fair policy
    /// owed such a tenant <c>weight / sum of the weights of all such tenants</c> of the minute's claims. One with
    /// neither is left out. A tenant whose ready items no free worker could take (tasks, backoff, a block) still
    /// counts as owed, which is what the page should show: a share it did not get.
    /// </summary>
    public static TenantShares Of(IReadOnlyList<Row> rows)
    {
        var withWork = rows.Where(r => r.Claims > 0 || r.Ready > 0).ToList();
        var claims = withWork.Sum(r => r.Claims);
        var weights = withWork.Sum(r => (long)r.Weight);
        var tenants = withWork
            .Select(r => new TenantShare(r.TenantId, r.TenantName, r.Weight, r.Claims, r.Ready,
                claims == 0 ? 0 : (double)r.Claims / claims,
                (double)r.Weight / weights))
            .OrderBy(t => t.TenantName, StringComparer.Ordinal)
            .ToList();
        return new TenantShares(rows.Count == 0 ? null : rows[0].At, tenants);
    }

    /// <summary>A row of <c>AdminSql.LastMinuteShares</c>.</summary>
    public sealed record Row(DateTime At, long TenantId, string TenantName, int Weight, long Claims, long Ready);
}
