namespace Queue.Admin;

public static class AdminPolicies
{
    public const string Technician = "technician";

    /// <summary>Only the cookie issued at technician sign-in carries this claim; API keys never do.</summary>
    public const string TechnicianClaim = "queue:technician";
}
