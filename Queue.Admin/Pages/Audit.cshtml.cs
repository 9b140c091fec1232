using Microsoft.AspNetCore.Mvc.RazorPages;
using Queue.Core.Admin;

namespace Queue.Admin.Pages;

public sealed class AuditModel(AdminQueries queries) : PageModel
{
    public long? Job { get; private set; }

    public AuditPage Result { get; private set; } = new([], null);

    public async Task OnGetAsync(long? job, long? before, CancellationToken ct)
    {
        Job = job;
        Result = await queries.AuditAsync(job, before ?? long.MaxValue, 100, ct);
    }
}
