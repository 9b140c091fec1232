using Microsoft.AspNetCore.Mvc;
using Microsoft.AspNetCore.Mvc.RazorPages;
using Queue.Core;
using Queue.Core.Admin;
using Queue.Core.Security;

namespace Queue.Admin.Pages;

/// <summary>The ordering as the next claim sees it, one keyset page at a time.</summary>
public sealed class QueueModel(AdminQueries queries, TenantService tenants, TimeProvider clock) : PageModel
{
    [BindProperty(SupportsGet = true)]
    public string? After { get; set; }

    [BindProperty(SupportsGet = true, Name = "task")]
    public string? TaskName { get; set; }

    [BindProperty(SupportsGet = true)]
    public string? Tenant { get; set; }

    [BindProperty(SupportsGet = true)]
    public int Size { get; set; } = 50;

    public QueuePage Result { get; private set; } = new([], null, null);

    public IReadOnlyList<Tenant> Tenants { get; private set; } = [];

    public DateTime Now { get; private set; }

    public string? FilterError { get; private set; }

    public async Task<IActionResult> OnGetAsync(CancellationToken ct)
    {
        Now = clock.GetUtcNow().UtcDateTime;
        Tenants = await tenants.ListAsync(ct);
        if (Size is < 1 or > AdminQueries.MaxPageSize)
        {
            FilterError = $"Page size must be 1 to {AdminQueries.MaxPageSize}; showing 50.";
            Size = 50;
        }
        var cursor = QueueCursor.Parse(After);
        if (cursor is null)
        {
            FilterError = "That page link is damaged; showing the first page.";
            cursor = QueueCursor.Start;
            After = null;
        }
        TaskName = string.IsNullOrWhiteSpace(TaskName) ? null : TaskName.Trim();
        if (TaskName is not null && !Validation.TaskName().IsMatch(TaskName))
        {
            FilterError = $"'{TaskName}' is not a task name (1 to 32 of a-z, 0-9 and '-'); showing every task.";
            TaskName = null;
        }
        long? tenantId = null;
        if (!string.IsNullOrWhiteSpace(Tenant))
        {
            tenantId = Tenants.FirstOrDefault(t => t.Name == Tenant)?.Id;
            if (tenantId is null)
            {
                FilterError = $"There is no tenant '{Tenant}'; showing every tenant.";
                Tenant = null;
            }
        }
        if (TaskName is not null && tenantId is not null)
        {
            FilterError = "Filter by task or by tenant, not both; showing the task filter.";
            tenantId = null;
            Tenant = null;
        }
        Result = await queries.QueueAsync(new QueueFilter(TaskName, tenantId), cursor, Size, ct);
        return Page();
    }
}
