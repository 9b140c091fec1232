namespace Queue.Core.Ordering;

/// <summary>One job with work as the preview's statements stream it (Sql.PreviewSql), in claim-walk order.</summary>
public sealed class PreviewRow
{
    public long JobId { get; set; }

    public long TenantId { get; set; }

    public long Items { get; set; }

    public long Blocked { get; set; }

    public long IsOverride { get; set; }

    public long WhatIf { get; set; }

    public long Value { get; set; }

    /// <summary>The lanes' mode (today's ordering only).</summary>
    public string? Mode { get; set; }
}

/// <summary>A listed job and where claims would meet it: the items served before its first one.</summary>
public readonly record struct PlannedJob(PreviewRow Row, int Position, long ClaimsBefore);

/// <summary>One tenant's totals, summed while the rows stream by.</summary>
public sealed record PlannedTenant(long TenantId, long Jobs, long Items, double Share, long FirstClaimsBefore, long LastClaimEnd);

/// <summary>
/// Turns the stream of jobs in claim-walk order into positions and per-tenant sums, holding only the
/// <c>top</c> best jobs (a bounded heap) and one running total per tenant: memory does not grow with the queue.
/// <para>
/// Seed: the stream's order is the claim order. Tenant-fair: override jobs first (the stream sorts them first), then
/// the tenants take turns by weight as <see cref="Fairness.FairShare"/> does with every tenant starting level: a
/// tenant's n-th claim has pass n / weight, claims go lowest pass first, ties to the lower tenant id, and override
/// claims count against their tenant. A job's place is its first claim: pass (its tenant's items before it) / weight.
/// </para>
/// </summary>
public sealed class PreviewPlanner(bool tenantFair, int top, IReadOnlyDictionary<long, int> weights, long? onlyTenant = null)
{
    private readonly Dictionary<long, Acc> tenants = [];
    private readonly List<PlannedJob> listed = [];
    private readonly PriorityQueue<Candidate, Candidate> fair = new(Comparer<Candidate>.Create(static (a, b) => Order(b, a)));
    private long seq;
    private long claimed;      // seed: items before the next job; tenant-fair: override items so far
    private long overrideJobs;

    public long Jobs { get; private set; }

    public long BlockedJobs { get; private set; }

    public void Add(PreviewRow row)
    {
        if (row.Blocked != 0)
        {
            // Claims skip blocked jobs; the rewrite still ranks them (the stream's values already count them).
            BlockedJobs++;
            return;
        }
        Jobs++;
        var acc = Tenant(row.TenantId);
        var mine = onlyTenant is null || onlyTenant == row.TenantId;
        acc.Jobs++;
        if (!tenantFair || row.IsOverride != 0)
        {
            // In the claim order itself: seed, or an override job (served before any tenant's turn).
            acc.FirstBefore ??= claimed;
            if (mine && listed.Count < top)
            {
                listed.Add(new PlannedJob(row, 0, claimed));
            }
            claimed += row.Items;
            acc.LastEnd = claimed;
            acc.Items += row.Items;
            acc.OverrideItems += tenantFair ? row.Items : 0;
            overrideJobs += tenantFair ? 1 : 0;
            return;
        }
        var c = new Candidate(row, acc.Items, Weight(row.TenantId), seq++);
        acc.Items += row.Items;
        if (!mine)
        {
            return;
        }
        if (fair.Count < top)
        {
            fair.Enqueue(c, c);
        }
        else if (top > 0 && Order(c, fair.Peek()) < 0)
        {
            fair.DequeueEnqueue(c, c);
        }
    }

    public (List<PlannedJob> Positions, List<PlannedTenant> Tenants) Finish()
    {
        var positions = new List<PlannedJob>(top);
        foreach (var j in listed)
        {
            positions.Add(j with { Position = positions.Count + 1 });
        }
        var best = new List<Candidate>(fair.Count);
        while (fair.Count > 0)
        {
            best.Add(fair.Dequeue());
        }
        best.Reverse();
        // Listed override jobs come first; under a tenant filter, positions are within the tenant.
        var ahead = onlyTenant is null ? overrideJobs : listed.Count;
        foreach (var c in best)
        {
            if (positions.Count >= top)
            {
                break;
            }
            positions.Add(new PlannedJob(c.Row, (int)Math.Min(int.MaxValue, ahead + positions.Count - listed.Count + 1), ClaimsBefore(c.Before, c.Row.TenantId)));
        }
        var totalWeight = tenants.Keys.Sum(t => (long)Weight(t));
        var totalItems = tenants.Values.Sum(a => a.Items);
        var sums = new List<PlannedTenant>(tenants.Count);
        foreach (var (id, a) in tenants)
        {
            var share = tenantFair ? (double)Weight(id) / Math.Max(1, totalWeight) : totalItems == 0 ? 0 : (double)a.Items / totalItems;
            long first, last;
            if (!tenantFair)
            {
                (first, last) = (a.FirstBefore ?? 0, a.LastEnd);
            }
            else
            {
                first = a.FirstBefore ?? ClaimsBefore(0, id);
                last = a.Items > a.OverrideItems ? ClaimsBefore(a.Items - 1, id) + 1 : a.LastEnd;
            }
            sums.Add(new PlannedTenant(id, a.Jobs, a.Items, share, first, last));
        }
        sums.Sort(static (x, y) => x.FirstClaimsBefore != y.FirstClaimsBefore ? x.FirstClaimsBefore.CompareTo(y.FirstClaimsBefore) : x.TenantId.CompareTo(y.TenantId));
        return (positions, sums);
    }

    /// <summary>
    /// Tenant-fair: the items served before tenant <paramref name="tenant"/>'s claim number <paramref name="before"/>
    /// (its pass before / weight): every override item, then each tenant's turns with a lower pass (or the same pass
    /// and a lower id), never more than it has.
    /// </summary>
    private long ClaimsBefore(long before, long tenant)
    {
        var w = Weight(tenant);
        var total = claimed;
        foreach (var (u, a) in tenants)
        {
            var fairItems = a.Items - a.OverrideItems;
            if (u == tenant)
            {
                total += Math.Clamp(before - a.OverrideItems, 0, fairItems);
                continue;
            }
            // Claims n of u with n / w_u < before / w (or <= for a lower id): n * w < before * w_u.
            var scaled = (Int128)before * Weight(u);
            var count = u < tenant ? (long)(scaled / w) + 1 : (long)((scaled + w - 1) / w);
            total += Math.Clamp(count - a.OverrideItems, 0, fairItems);
        }
        return total;
    }

    private int Weight(long tenant) => Math.Max(1, weights.GetValueOrDefault(tenant, 1));

    private Acc Tenant(long id)
    {
        if (!tenants.TryGetValue(id, out var acc))
        {
            tenants[id] = acc = new Acc();
        }
        return acc;
    }

    /// <summary>Claim order of first claims: lower pass (before / weight), then lower tenant id, then the tenant's own order.</summary>
    private static int Order(Candidate a, Candidate b)
    {
        var l = (Int128)a.Before * b.Weight;
        var r = (Int128)b.Before * a.Weight;
        return l != r ? l.CompareTo(r) : a.Row.TenantId != b.Row.TenantId ? a.Row.TenantId.CompareTo(b.Row.TenantId) : a.Seq.CompareTo(b.Seq);
    }

    private readonly record struct Candidate(PreviewRow Row, long Before, int Weight, long Seq);

    private sealed class Acc
    {
        public long Jobs;
        public long Items;
        public long OverrideItems;
        public long? FirstBefore;
        public long LastEnd;
    }
}
