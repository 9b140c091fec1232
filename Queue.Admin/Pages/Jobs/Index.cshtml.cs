using Microsoft.AspNetCore.Mvc;
using Microsoft.AspNetCore.Mvc.RazorPages;
using Queue.Core.Admin;

namespace Queue.Admin.Pages.Jobs;

/// <summary>Open a job by id, or browse the newest jobs.</summary>
public sealed class IndexModel(AdminQueries queries, TimeProvider clock) : PageModel
{
    public IReadOnlyList<AdminJob> Jobs { get; private set; } = [];

    public long? NextBefore { get; private set; }

    public string? LookupError { get; private set; }

    public DateTime Now { get; private set; }

    public async Task<IActionResult> OnGetAsync(string? id, long? before, CancellationToken ct)
    {
        if (!string.IsNullOrWhiteSpace(id))
        {
            var trimmed = id.Trim().TrimStart('#');
            if (long.TryParse(trimmed, System.Globalization.NumberStyles.None, System.Globalization.CultureInfo.InvariantCulture, out var jobId)
                && await queries.JobAsync(jobId, ct) is not null)
            {
                return RedirectToPage("/Jobs/Job", new { id = jobId });
            }
            LookupError = $"There is no job '{id.Trim()}'. Enter a job id, a whole number such as 1234.";
        }
        Now = clock.GetUtcNow().UtcDateTime;
        (Jobs, NextBefore) = await queries.RecentJobsAsync(before ?? long.MaxValue, 50, ct);
        return Page();
    }
}
