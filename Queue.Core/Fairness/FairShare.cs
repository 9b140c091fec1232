using Queue.Core.Ordering;

namespace Queue.Core.Fairness;

/// <summary>
/// Weighted fair sharing of claims between tenants (stride scheduling with start-time virtual time, as in SFQ).
/// Each tenant has a pass: the claims it was served divided by its weight. The next claim goes to the tenant with
/// work whose pass is lowest (ties to the lower tenant id). <see cref="VirtualTime"/> is the lowest pass among the
/// tenants that kept having claimable work. A tenant that had none is lifted, when it shows up again, to the
/// least-served such tenant's pass minus the return credit (<see cref="OrderingOptions.ReturnCredit"/>): idling banks
/// at most that much, as a woken task's place in Linux's fair scheduler does, so a small job that arrives beside a
/// flood takes its first few items ahead instead of one turn in two from the start. With no credit it starts level.
/// Debt is kept (a tenant served ahead of its share and then idle is not lifted, nor lowered), as in start-time fair
/// queueing; what a tenant was served while it was the only one with work is not debt, so the virtual time catches up
/// with it when another shows up, as SFQ's moves with the item in service.
/// <para>
/// The state is in memory, per Api process (docs/DESIGN.md "Fairness"): claims never write a shared row, and with
/// several Api processes each one shares its own claims fairly, so their sum is fair too.
/// </para>
/// </summary>
public sealed class FairShare(double returnCredit = 0)
{
    private readonly Lock gate = new();
    private readonly Dictionary<long, double> pass = [];
    private double virtualTime;

    /// <summary>The one tenant the last <see cref="Backlogged"/> saw with work, if it saw only one.</summary>
    private long? alone;

    /// <summary>
    /// The lowest pass a tenant with work is ranked at: the virtual time less the return credit. A tenant whose own pass
    /// is lower idled past its credit, and is ranked at the floor. Under <see cref="gate"/>.
    /// </summary>
    private double Floor => virtualTime - returnCredit;

    public double VirtualTime
    {
        get
        {
            lock (gate)
            {
                return virtualTime;
            }
        }
    }

    public double PassOf(long tenant)
    {
        lock (gate)
        {
            return Math.Max(pass.GetValueOrDefault(tenant), Floor);
        }
    }

    /// <summary>The pass a tenant with no pass yet would be ranked at (<see cref="PassOf"/> of an unknown tenant).</summary>
    public double NewcomerPass
    {
        get
        {
            lock (gate)
            {
                return Math.Max(0, Floor);
            }
        }
    }

    /// <summary>
    /// A tenant's own pass, not lifted to the virtual time: its turn for items the claim-ahead buffer holds for it.
    /// The selector sees only the database, so while a tenant's work waits in memory it looks idle there and the
    /// virtual time moves on to the others' passes; lifted, the tenant would lose its place to them at each refill.
    /// It was lifted when its work showed up (<see cref="Backlogged"/>), so it banks nothing from before.
    /// </summary>
    public double OwnPassOf(long tenant)
    {
        lock (gate)
        {
            return pass.GetValueOrDefault(tenant);
        }
    }

    /// <summary>Orders tenants by their turn (lowest pass first, ties to the lower id), without changing anything.</summary>
    public List<long> Rank(IEnumerable<long> tenants)
    {
        lock (gate)
        {
            var list = tenants.Select(t => (Tenant: t, Pass: Math.Max(pass.GetValueOrDefault(t), Floor))).ToList();
            list.Sort(static (a, b) => a.Pass != b.Pass ? a.Pass.CompareTo(b.Pass) : a.Tenant.CompareTo(b.Tenant));
            return list.ConvertAll(x => x.Tenant);
        }
    }

    /// <summary>
    /// These tenants have claimable work now. Any that fell behind the virtual time while it had none is lifted to the
    /// pass of the least-served tenant that kept up less the return credit (with none it starts level, and loses the tie
    /// to the lower id); one still within its credit keeps what is left of it. The virtual time moves up to that pass.
    /// </summary>
    public void Backlogged(IReadOnlyCollection<long> tenants)
    {
        if (tenants.Count == 0)
        {
            return;
        }
        lock (gate)
        {
            // A tenant that had the claims to itself since the last round took them from nobody: its lead over the
            // virtual time (a whole job's items, charged after the round that saw it) is not debt. Kept, a small
            // tenant's solo jobs put a flood that started beside it 13 turns ahead of it (a fairness trace: the small
            // job's first items waited for the flood's first 10 claims).
            var first = tenants.First();
            long? only = tenants.All(t => t == first) ? first : null;
            if (alone is { } solo && only != solo)
            {
                virtualTime = Math.Max(virtualTime, pass.GetValueOrDefault(solo));
            }
            alone = only;
            var level = double.MaxValue;
            foreach (var t in tenants)
            {
                var p = pass.GetValueOrDefault(t);
                if (p >= virtualTime)
                {
                    level = Math.Min(level, p);
                }
            }
            if (level == double.MaxValue)
            {
                level = virtualTime; // all of them come back from idling: they start level with each other
            }
            foreach (var t in tenants)
            {
                var p = pass.GetValueOrDefault(t);
                pass[t] = p >= virtualTime ? p : Math.Max(p, level - returnCredit);
            }
            virtualTime = Math.Max(virtualTime, level);
        }
    }

    /// <summary>
    /// The next <paramref name="picks"/> claims among <paramref name="tenantsWithWork"/> by stride, without charging
    /// anyone: how many each tenant gets, in turn order. Used to give each tenant its quota in one claim round.
    /// </summary>
    public List<(long Tenant, int Count)> Plan(IReadOnlyList<long> tenantsWithWork, Func<long, int> weight, int picks)
    {
        lock (gate)
        {
            var sim = tenantsWithWork.Select(t => (Tenant: t, Pass: Math.Max(pass.GetValueOrDefault(t), Floor))).ToList();
            var counts = new Dictionary<long, int>();
            var order = new List<long>();
            for (var k = 0; k < picks && sim.Count > 0; k++)
            {
                var best = 0;
                for (var i = 1; i < sim.Count; i++)
                {
                    if (sim[i].Pass < sim[best].Pass || (sim[i].Pass == sim[best].Pass && sim[i].Tenant < sim[best].Tenant))
                    {
                        best = i;
                    }
                }
                var (t, p) = sim[best];
                if (!counts.ContainsKey(t))
                {
                    order.Add(t);
                }
                counts[t] = counts.GetValueOrDefault(t) + 1;
                sim[best] = (t, p + (1.0 / Math.Max(1, weight(t))));
            }
            return order.ConvertAll(t => (t, counts[t]));
        }
    }

    /// <summary>Charges <paramref name="count"/> claims to a tenant.</summary>
    public void Charge(long tenant, int count, int weight)
    {
        if (count <= 0)
        {
            return;
        }
        lock (gate)
        {
            pass[tenant] = Math.Max(pass.GetValueOrDefault(tenant), Floor) + ((double)count / Math.Max(1, weight));
        }
    }
}
