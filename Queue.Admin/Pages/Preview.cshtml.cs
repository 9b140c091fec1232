using Microsoft.AspNetCore.Mvc;
using Microsoft.AspNetCore.Mvc.RazorPages;
using Microsoft.Extensions.Options;
using Queue.Core.Ordering;

namespace Queue.Admin.Pages;

/// <summary>
/// See ahead (issue 38): the first positions the next rewrite into a mode would give, beside today's, and per tenant
/// the jobs, items, expected share of claims and ETAs. Core's <see cref="OrderingPreview"/>, the same as the CLI's;
/// it writes nothing, so it is a GET.
/// </summary>
public sealed class PreviewModel(OrderingPreview preview, OrderingCalendar calendar, IOptions<OrderingOptions> options) : PageModel
{
    public const int Shown = 50;

    /// <summary>A job that moves by more than this many positions is marked.</summary>
    public const int MoveMark = 10;

    [BindProperty(SupportsGet = true)]
    public string? Mode { get; set; }

    [BindProperty(SupportsGet = true)]
    public string? Policy { get; set; }

    public PreviewResult Next { get; private set; } = null!;

    public PreviewResult Today { get; private set; } = null!;

    public string? FilterError { get; private set; }

    /// <summary>Today's position of each job within the first <see cref="OrderingPreview.WhatIfDepth"/>.</summary>
    public IReadOnlyDictionary<long, int> TodayPositions { get; private set; } = new Dictionary<long, int>();

    public async Task<IActionResult> OnGetAsync(CancellationToken ct)
    {
        if (Mode is not (null or "smallest" or "oldest"))
        {
            FilterError = $"'{Mode}' is not a mode (smallest or oldest); showing the next rewrite's.";
            Mode = null;
        }
        if (Policy is not (null or OrderingOptions.Seed or OrderingOptions.TenantFair))
        {
            FilterError = $"'{Policy}' is not a policy (seed or tenant-fair); showing the configured one.";
            Policy = null;
        }
        Mode ??= calendar.Current.NextMode == OrderingMode.Smallest ? "smallest" : "oldest";
        Policy ??= options.Value.Policy;
        // Side by side on two connections: each is one pass over every job, and the server has a core for each.
        // Today deeper than shown, so that a job that climbs from far back is still placed (or known to be further back).
        var next = preview.PreviewAsync(new PreviewRequest(Mode, Policy, Top: Shown), ct);
        var today = preview.PreviewAsync(new PreviewRequest(null, Policy, Top: OrderingPreview.WhatIfDepth), ct);
        (Next, Today) = (await next, await today);
        TodayPositions = Today.Positions.ToDictionary(p => p.JobId, p => p.Position);
        return Page();
    }

    /// <summary>How far a job moves (positive: forward), or null when it is further back than compared today.</summary>
    public int? Moves(PreviewPosition p) => TodayPositions.TryGetValue(p.JobId, out var was) ? was - p.Position : null;

    public static bool Marked(int? moves) => moves is not { } m || Math.Abs(m) > MoveMark;
}
