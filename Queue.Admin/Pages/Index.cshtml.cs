using Microsoft.AspNetCore.Mvc.RazorPages;

namespace Queue.Admin.Pages;

public sealed class IndexModel : PageModel
{
    public void OnGet()
    {
    }
}
