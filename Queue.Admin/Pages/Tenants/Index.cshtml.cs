using Microsoft.AspNetCore.Mvc;
using Microsoft.AspNetCore.Mvc.RazorPages;
using Queue.Admin.Infrastructure;
using Queue.Core;
using Queue.Core.Admin;
using Queue.Core.Security;

namespace Queue.Admin.Pages.Tenants;

public sealed class IndexModel(TenantService tenants, TenantAdmin admin) : PageModel
{
    public IReadOnlyList<Tenant> Tenants { get; private set; } = [];

    [BindProperty]
    public TenantForm Form { get; set; } = new();

    public async Task OnGetAsync(CancellationToken ct) => Tenants = await tenants.ListAsync(ct);

    public async Task<IActionResult> OnPostAsync(CancellationToken ct)
    {
        if (Form.Validate(ModelState, checkName: true))
        {
            try
            {
                var t = await admin.CreateAsync(Format.ActorOf(User), Form.Name.Trim(), Form.ToSettings(), ct);
                TempData["Message"] = $"Tenant {t.Name} created. Issue it a customer key below.";
                return RedirectToPage("/Tenants/Tenant", new { id = t.Id });
            }
            catch (ValidationException ex)
            {
                TenantForm.AddErrors(ModelState, ex);
            }
        }
        Tenants = await tenants.ListAsync(ct);
        return Page();
    }
}
