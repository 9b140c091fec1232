using Microsoft.AspNetCore.Mvc;
using Microsoft.AspNetCore.Mvc.RazorPages;
using Queue.Admin.Infrastructure;
using Queue.Core;
using Queue.Core.Admin;
using Queue.Core.Security;

namespace Queue.Admin.Pages.Tenants;

/// <summary>One tenant: its settings and its customer keys.</summary>
public sealed class TenantModel(TenantService tenants, ApiKeyService keys, TenantAdmin admin) : PageModel
{
    public Tenant Tenant { get; private set; } = null!;

    public IReadOnlyList<KeyInfo> Keys { get; private set; } = [];

    [BindProperty]
    public TenantForm Form { get; set; } = new();

    public IssuedKey? NewKey { get; private set; }

    public string? Label { get; private set; }

    public Confirmation? Confirm { get; private set; }

    public async Task<IActionResult> OnGetAsync(long id, CancellationToken ct)
    {
        if (!await LoadAsync(id, ct))
        {
            return NotFound();
        }
        Form = TenantForm.From(Tenant);
        return Page();
    }

    public async Task<IActionResult> OnPostAsync(long id, CancellationToken ct)
    {
        if (!await LoadAsync(id, ct))
        {
            return NotFound();
        }
        if (Form.Validate(ModelState, checkName: false))
        {
            try
            {
                if (!await admin.UpdateAsync(Format.ActorOf(User), id, Form.ToSettings(), ct))
                {
                    return NotFound();
                }
                TempData["Message"] = $"Settings of {Tenant.Name} saved.";
                return RedirectToPage("/Tenants/Tenant", new { id });
            }
            catch (ValidationException ex)
            {
                TenantForm.AddErrors(ModelState, ex);
            }
        }
        return Page();
    }

    public async Task<IActionResult> OnPostIssueAsync(long id, string? label, CancellationToken ct)
    {
        if (!await LoadAsync(id, ct))
        {
            return NotFound();
        }
        ClearFormErrors();
        Form = TenantForm.From(Tenant);
        Label = label;
        try
        {
            NewKey = await admin.IssueKeyAsync(Format.ActorOf(User), KeyRole.Customer, id, label, ct);
            Keys = await keys.ListAsync(id, ct);
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
        return Page();
    }

    public async Task<IActionResult> OnPostRevokeAsync(long id, long keyId, bool confirmed, CancellationToken ct)
    {
        if (!await LoadAsync(id, ct))
        {
            return NotFound();
        }
        if (!confirmed)
        {
            var key = Keys.FirstOrDefault(k => k.Id == keyId);
            if (key is null)
            {
                return NotFound();
            }
            ClearFormErrors();
            Form = TenantForm.From(Tenant);
            Confirm = new Confirmation($"Revoke {Tenant.Name}'s key {key.Prefix}…?",
                "Every script using it gets 401 from now on. This cannot be undone.",
                "Revoke", "Yes, revoke the key", Url.Page("/Tenants/Tenant", new { id })!, [("keyId", keyId.ToString(System.Globalization.CultureInfo.InvariantCulture))]);
            return Page();
        }
        var outcome = await admin.RevokeKeyAsync(Format.ActorOf(User), keyId, id, ct);
        if (outcome.Status == ActionStatus.NotFound)
        {
            return NotFound();
        }
        TempData["Message"] = outcome.Message;
        return RedirectToPage("/Tenants/Tenant", new { id });
    }

    /// <summary>The settings form is bound on every POST of this page; only its own handler reports on it.</summary>
    private void ClearFormErrors()
    {
        foreach (var key in ModelState.Keys.Where(k => k.StartsWith("Form.", StringComparison.Ordinal)).ToList())
        {
            ModelState.Remove(key);
        }
    }

    private async Task<bool> LoadAsync(long id, CancellationToken ct)
    {
        var t = await tenants.GetAsync(id, ct);
        if (t is null)
        {
            return false;
        }
        Tenant = t;
        Keys = await keys.ListAsync(id, ct);
        return true;
    }
}
