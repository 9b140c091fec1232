using Microsoft.AspNetCore.Mvc.RazorPages;
using MySqlConnector;
using Queue.Core.Admin;
using Queue.Core.Data;
using Queue.Core.Fairness;

namespace Queue.Admin.Pages;

public sealed class IndexModel(AdminQueries queries, MySqlDataSource db, ReadSource reads, TimeProvider clock) : PageModel
{
    /// <summary>Where reads that may lag go, and the replica's lag (shown only when there is a replica).</summary>
    public ReadSource Reads => reads;

    public Dashboard Data { get; private set; } = null!;

    /// <summary>The fairness metrics each Api process wrote in the last five minutes (one per process).</summary>
    public IReadOnlyList<FairnessSnapshot> Fairness { get; private set; } = [];

    /// <summary>Each tenant's share of the last recorded minute's claims, beside its weight.</summary>
    public TenantShares Shares { get; private set; } = new(null, []);

    public async Task OnGetAsync(CancellationToken ct)
    {
        Data = await queries.DashboardAsync(ct);
        Shares = await queries.SharesAsync(ct);
        Fairness = await FairnessMonitor.RecentAsync(db, clock.GetUtcNow().UtcDateTime, ct);
    }
}
