using System.Globalization;
using Microsoft.AspNetCore.Mvc;
using Microsoft.AspNetCore.Mvc.RazorPages;
using Queue.Admin.Infrastructure;
using Queue.Core;
using Queue.Core.Admin;
using Queue.Core.Fairness;
using Queue.Core.Ordering;
using Microsoft.Extensions.Options;

namespace Queue.Admin.Pages.Jobs;

/// <summary>One job: items by state, ordering, dead items with their errors, and the technicians' actions.</summary>
public sealed class JobModel(AdminQueries queries, JobActions actions, ExplainService explain, OrderingPreview preview,
    IOptions<OrderingOptions> ordering, TimeProvider clock) : PageModel
{
    /// <summary>What the override being typed would do, before it is saved (the form's Preview button).</summary>
    public WhatIfResult? WhatIf { get; private set; }

    /// <summary>The same explanation a customer gets from GET /jobs/{id}/explain.</summary>
    public JobExplanation? Explanation { get; private set; }

    /// <summary>The job is deeper than <see cref="Queue.Core.Ordering.QueuePosition.ExactLimit"/>: the explanation is a link away.</summary>
    public bool ExplanationDeferred { get; private set; }

    public const int DeadPageSize = 50;

    public JobDetail Detail { get; private set; } = null!;

    public long? LowestValue { get; private set; }

    public DateTime Now { get; private set; }

    /// <summary>The form that was posted and failed validation: it shows the errors and keeps what was typed.</summary>
    public string? ActiveForm { get; private set; }

    public string? Priority { get; private set; }

    public string? Reason { get; private set; }

    public string ExpiresInHours { get; private set; } = "24";

    public long? ItemId { get; private set; }

    public Confirmation? Confirm { get; private set; }

    /// <summary>Why the last action was refused (job cancelled and the like).</summary>
    public string? Refusal { get; private set; }

    public string? ErrorFor(string form, string field) =>
        ActiveForm == form && ModelState.TryGetValue(field, out var e) && e.Errors.Count > 0 ? e.Errors[0].ErrorMessage : null;

    public string? ValueFor(string form, string? value) => ActiveForm == form ? value : null;

    public async Task<IActionResult> OnGetAsync(long id, long? deadAfter, CancellationToken ct) =>
        await LoadAsync(id, deadAfter ?? 0, ct) ? Page() : NotFound();

    public async Task<IActionResult> OnPostOverrideAsync(long id, string? priority, string? reason, string? expiresInHours, CancellationToken ct)
    {
        (ActiveForm, Priority, Reason, ExpiresInHours) = ("override", priority, reason, string.IsNullOrWhiteSpace(expiresInHours) ? "24" : expiresInHours.Trim());
        if (!long.TryParse(priority?.Trim(), NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out var value))
        {
            var low = await queries.LowestValueAsync(ct);
            var hint = low is { } l ? $" The lowest value in the queue is {l}, so {l - 1} puts this job first." : "";
            ModelState.AddModelError("priority", "Enter the priority as a whole number; lower values are served first." + hint);
        }
        if (!double.TryParse(ExpiresInHours, NumberStyles.Float, CultureInfo.InvariantCulture, out var hours) || hours is < 0.1 or > 720 || double.IsNaN(hours))
        {
            ModelState.AddModelError("expiresInHours", "Enter the expiry in hours, from 0.1 to 720 (30 days); 24 keeps it for a day.");
        }
        if (JobActions.ReasonError(reason) is { } r)
        {
            ModelState.AddModelError("reason", r);
        }
        if (!ModelState.IsValid)
        {
            return await PageAsync(id, ct);
        }
        var expires = clock.GetUtcNow().UtcDateTime.AddHours(hours);
        return await RunAsync(id, () => actions.SetOverrideAsync(id, Format.ActorOf(User), value, reason, expires, ct), ct);
    }

    /// <summary>
    /// The override form's Preview: the job's new position and who moves back, computed by Core's
    /// <see cref="OrderingPreview"/> under the configured policy. Writes nothing; Apply posts the same fields to
    /// <see cref="OnPostOverrideAsync"/>, which saves and audits as always.
    /// </summary>
    public async Task<IActionResult> OnPostPreviewOverrideAsync(long id, string? priority, string? reason, string? expiresInHours, CancellationToken ct)
    {
        (ActiveForm, Priority, Reason, ExpiresInHours) = ("override", priority, reason, string.IsNullOrWhiteSpace(expiresInHours) ? "24" : expiresInHours.Trim());
        if (!long.TryParse(priority?.Trim(), NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out var value)
            || value is < JobActions.MinPriority or > JobActions.MaxPriority)
        {
            ModelState.AddModelError("priority", $"Enter the priority as a whole number from {JobActions.MinPriority} to {JobActions.MaxPriority}; lower values are served first.");
            return await PageAsync(id, ct);
        }
        WhatIf = await preview.WhatIfAsync(id, value, ordering.Value.Policy, ct);
        return await PageAsync(id, ct);
    }

    public async Task<IActionResult> OnPostClearOverrideAsync(long id, string? reason, bool confirmed, CancellationToken ct) =>
        await ConfirmedActionAsync(id, "clear", reason, null, confirmed,
            new Confirmation("Clear the override?", "The job goes back to its value in the current mode at once, and may drop far down the queue.",
                "ClearOverride", "Yes, clear the override", Url.Page("/Jobs/Job", new { id })!, []),
            () => actions.ClearOverrideAsync(id, Format.ActorOf(User), reason, ct), ct);

    public async Task<IActionResult> OnPostBlockAsync(long id, string? reason, bool confirmed, CancellationToken ct) =>
        await ConfirmedActionAsync(id, "block", reason, null, confirmed,
            new Confirmation("Block this job?", "No worker will get any of its items until it is unblocked. Leases already out may still complete.",
                "Block", "Yes, block the job", Url.Page("/Jobs/Job", new { id })!, []),
            () => actions.SetBlockedAsync(id, Format.ActorOf(User), blocked: true, reason, ct), ct);

    public async Task<IActionResult> OnPostUnblockAsync(long id, string? reason, CancellationToken ct)
    {
        (ActiveForm, Reason) = ("unblock", reason);
        if (JobActions.ReasonError(reason) is { } r)
        {
            ModelState.AddModelError("reason", r);
            return await PageAsync(id, ct);
        }
        return await RunAsync(id, () => actions.SetBlockedAsync(id, Format.ActorOf(User), blocked: false, reason, ct), ct);
    }

    public async Task<IActionResult> OnPostRequeueAsync(long id, long? itemId, string? reason, bool confirmed, CancellationToken ct)
    {
        ItemId = itemId;
        var what = itemId is { } item ? $"dead item {item}" : "every dead item of this job";
        return await ConfirmedActionAsync(id, "requeue", reason, itemId, confirmed,
            new Confirmation($"Requeue {what}?", "The items become ready now, with their attempts reset to 0; their error history is kept.",
                "Requeue", "Yes, requeue", Url.Page("/Jobs/Job", new { id })!,
                itemId is { } i ? [("itemId", i.ToString(CultureInfo.InvariantCulture))] : []),
            () => actions.RequeueDeadAsync(id, itemId, Format.ActorOf(User), reason, ct), ct);
    }

    public async Task<IActionResult> OnPostCancelAsync(long id, string? reason, bool confirmed, CancellationToken ct) =>
        await ConfirmedActionAsync(id, "cancel", reason, null, confirmed,
            new Confirmation("Cancel this job?", "Its ready items become cancelled and are never handed out again; this cannot be undone. Leases already out may still complete.",
                "Cancel", "Yes, cancel the job", Url.Page("/Jobs/Job", new { id })!, []),
            () => actions.CancelAsync(id, Format.ActorOf(User), reason, ct), ct);

    /// <summary>Validates the reason, then shows the confirmation step unless this POST is the confirmation itself.</summary>
    private async Task<IActionResult> ConfirmedActionAsync(long id, string form, string? reason, long? itemId, bool confirmed,
        Confirmation confirmation, Func<Task<ActionOutcome>> action, CancellationToken ct)
    {
        (ActiveForm, Reason, ItemId) = (form, reason, itemId);
        if (JobActions.ReasonError(reason) is { } r)
        {
            ModelState.AddModelError("reason", r);
            return await PageAsync(id, ct);
        }
        if (!confirmed)
        {
            Confirm = confirmation with
            {
                Description = confirmation.Description + $" Reason: \u201c{reason!.Trim()}\u201d.",
                Fields = [.. confirmation.Fields, ("reason", reason.Trim())],
            };
            return await PageAsync(id, ct);
        }
        return await RunAsync(id, action, ct);
    }

    private async Task<IActionResult> RunAsync(long id, Func<Task<ActionOutcome>> action, CancellationToken ct)
    {
        ActionOutcome outcome;
        try
        {
            outcome = await action();
        }
        catch (ValidationException ex)
        {
            foreach (var (field, messages) in ex.Errors)
            {
                ModelState.AddModelError(field == "expiresAt" ? "expiresInHours" : field, messages[0]);
            }
            return await PageAsync(id, ct);
        }
        switch (outcome.Status)
        {
            case ActionStatus.NotFound:
                return NotFound();
            case ActionStatus.Rejected:
                Refusal = outcome.Message;
                return await PageAsync(id, ct);
            default:
                TempData["Message"] = outcome.Message;
                return RedirectToPage("/Jobs/Job", new { id });
        }
    }

    /// <summary>Re-renders the page after a POST that did not go through (validation, confirmation, refusal).</summary>
    private async Task<IActionResult> PageAsync(long id, CancellationToken ct) => await LoadAsync(id, 0, ct) ? Page() : NotFound();

    private async Task<bool> LoadAsync(long id, long deadAfter, CancellationToken ct)
    {
        var detail = await queries.JobDetailAsync(id, deadAfter, DeadPageSize, ct);
        if (detail is null)
        {
            return false;
        }
        Detail = detail;
        // The explanation counts every job ahead (linear in the position); deep in a big queue it waits to be asked for.
        ExplanationDeferred = detail.PositionIsLowerBound && Request.Query["explain"] != "1";
        if (!ExplanationDeferred)
        {
            Explanation = await explain.ExplainAnyTenantAsync(id, ct);
        }
        LowestValue = await queries.LowestValueAsync(ct);
        Now = clock.GetUtcNow().UtcDateTime;
        return true;
    }
}
