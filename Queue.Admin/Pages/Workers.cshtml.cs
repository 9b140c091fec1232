using Microsoft.AspNetCore.Mvc;
using Microsoft.AspNetCore.Mvc.RazorPages;
using Queue.Admin.Infrastructure;
using Queue.Core;
using Queue.Core.Admin;
using Queue.Core.Security;

namespace Queue.Admin.Pages;

/// <summary>Who holds leases right now, and the worker keys.</summary>
public sealed class WorkersModel(AdminQueries queries, ApiKeyService keys, TenantAdmin admin, TimeProvider clock) : PageModel
{
    public IReadOnlyList<LeaseHolder> Holders { get; private set; } = [];

    public IReadOnlyList<KeyInfo> Keys { get; private set; } = [];

    public DateTime Now { get; private set; }

    public IssuedKey? NewKey { get; private set; }

    public string? Label { get; private set; }

    public Confirmation? Confirm { get; private set; }

    public async Task OnGetAsync(CancellationToken ct) => await LoadAsync(ct);

    public async Task<IActionResult> OnPostIssueAsync(string? label, CancellationToken ct)
    {
        Label = label;
        try
        {
            NewKey = await admin.IssueKeyAsync(Format.ActorOf(User), KeyRole.Worker, null, label, ct);
        }
        catch (ValidationException ex)
        {
            foreach (var (field, messages) in ex.Errors)
            {
                ModelState.AddModelError(field, messages[0]);
            }
        }
        // The secret is in this response only: never cached, never put in a redirect or TempData.
        Response.Headers.CacheControl = "no-store";
        await LoadAsync(ct);
        return Page();
    }

    public async Task<IActionResult> OnPostRevokeAsync(long keyId, bool confirmed, CancellationToken ct)
    {
        if (!confirmed)
        {
            await LoadAsync(ct);
            var key = Keys.FirstOrDefault(k => k.Id == keyId);
            if (key is null)
            {
                return NotFound();
            }
            Confirm = new Confirmation($"Revoke worker key {key.Prefix}…?",
                "Every worker using it gets 401 from now on; leases it holds run out and go back to the queue. This cannot be undone.",
                "Revoke", "Yes, revoke the key", Url.Page("/Workers")!, [("keyId", keyId.ToString(System.Globalization.CultureInfo.InvariantCulture))]);
            return Page();
        }
        var outcome = await admin.RevokeKeyAsync(Format.ActorOf(User), keyId, null, ct);
        if (outcome.Status == ActionStatus.NotFound)
        {
            return NotFound();
        }
        TempData["Message"] = outcome.Message;
        return RedirectToPage("/Workers");
    }

    private async Task LoadAsync(CancellationToken ct)
    {
        Now = clock.GetUtcNow().UtcDateTime;
        Holders = await queries.WorkersAsync(ct);
        Keys = await keys.ListAsync(null, ct);
    }
}
