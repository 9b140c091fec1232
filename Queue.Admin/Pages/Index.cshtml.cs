using Microsoft.AspNetCore.Mvc.RazorPages;
using Queue.Core.Admin;

namespace Queue.Admin.Pages;

public sealed class IndexModel(AdminQueries queries) : PageModel
{
    public Dashboard Data { get; private set; } = null!;

    public async Task OnGetAsync(CancellationToken ct) => Data = await queries.DashboardAsync(ct);
}
