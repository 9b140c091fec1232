using System.ComponentModel.DataAnnotations;
using System.Globalization;
using System.Security.Claims;
using Microsoft.AspNetCore.Authentication;
using Microsoft.AspNetCore.Authentication.Cookies;
using Microsoft.AspNetCore.Mvc;
using Microsoft.AspNetCore.Mvc.RazorPages;
using Queue.Core.Security;

namespace Queue.Admin.Pages.Account;

public sealed class LoginModel(TechnicianService technicians) : PageModel
{
    [BindProperty]
    [Required(ErrorMessage = "Enter your login.")]
    public string Login { get; set; } = "";

    [BindProperty]
    [Required(ErrorMessage = "Enter your password.")]
    public string Password { get; set; } = "";

    [BindProperty(SupportsGet = true)]
    public string? ReturnUrl { get; set; }

    public void OnGet()
    {
    }

    public async Task<IActionResult> OnPostAsync(CancellationToken ct)
    {
        if (!ModelState.IsValid)
        {
            return Page();
        }
        var (result, tech) = await technicians.SignInAsync(Login, Password, ct);
        if (result == TechnicianSignIn.LockedOut)
        {
            ModelState.AddModelError("", $"Too many failed sign-ins: this account is locked for {TechnicianService.LockoutTime.TotalMinutes:0} minutes.");
            return Page();
        }
        if (result != TechnicianSignIn.Success || tech is null)
        {
            ModelState.AddModelError("", "The login or password is wrong.");
            return Page();
        }
        var identity = new ClaimsIdentity(
            [
                new Claim(ClaimTypes.Name, tech.Login),
                new Claim(ClaimTypes.NameIdentifier, tech.Id.ToString(CultureInfo.InvariantCulture)),
                new Claim(AdminPolicies.TechnicianClaim, "1"),
            ], CookieAuthenticationDefaults.AuthenticationScheme);
        await HttpContext.SignInAsync(CookieAuthenticationDefaults.AuthenticationScheme, new ClaimsPrincipal(identity));
        return LocalRedirect(Url.IsLocalUrl(ReturnUrl) ? ReturnUrl! : "/");
    }
}
